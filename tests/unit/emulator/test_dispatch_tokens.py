"""Completion tokens cannot be guessed: 128 random bits each, nothing shared between tokens."""

from __future__ import annotations

import itertools

import pytest

from dtscale_emulator.dispatch.leases import TOKEN_BYTES, LeaseBook

pytestmark = pytest.mark.adversarial


def _minted(batches: int = 64, size: int = 16) -> list[str]:
    book = LeaseBook()
    return [token for _ in range(batches) for token in book.tokens(size)]


def test_a_token_carries_at_least_128_bits() -> None:
    assert TOKEN_BYTES * 8 >= 128
    for token in _minted(4, 4):
        assert len(token) == 2 * TOKEN_BYTES
        int(token, 16)  # hex


def test_tokens_share_no_prefix_and_no_suffix_beyond_chance() -> None:
    tokens = _minted()
    assert len(set(tokens)) == len(tokens)
    # A prefix per process, a serial number or a batch index would show up as 48 equal bits in many pairs; for
    # 1,024 random tokens the chance of even one such pair is about 2e-9.
    assert len({t[:12] for t in tokens}) == len(tokens)
    assert len({t[-12:] for t in tokens}) == len(tokens)


def test_two_books_never_mint_the_same_token() -> None:
    # Tokens stay unique across emulator processes (each has its own book) as well.
    first, second = set(_minted(8)), set(_minted(8))
    assert not first & second


def test_a_token_says_nothing_about_the_next() -> None:
    # Consecutive tokens differ in about half their bits, not in a few low ones.
    tokens = _minted(8, 2)
    for a, b in itertools.pairwise(tokens):
        differing = bin(int(a, 16) ^ int(b, 16)).count("1")
        assert differing >= 24, (a, b)
