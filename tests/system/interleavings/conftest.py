"""Seeds for the interleaving suite: a fixed few locally, one fresh seed more in CI, or one given to replay.

``DTS_INTERLEAVING_SEED=<n>`` runs only seed ``n``; in CI (``CI=true``) a fresh seed joins the fixed ones. The
seeds a run used are printed at its end, and each failure names its seed, so it can be replayed.
"""

from __future__ import annotations

import os
import random

import pytest

from tests.conftest import running_in_ci

from .runner import SEED_ENV

FIXED_SEEDS = (1, 2, 3)
_used: list[int] = []  # the seeds this run used, for the summary
_fresh: list[int] = []  # the run's one fresh seed, once drawn


def interleaving_seeds(fixed: tuple[int, ...] = FIXED_SEEDS) -> list[int]:
    given = os.environ.get(SEED_ENV, "").strip()
    if given:
        try:
            return [int(given)]
        except ValueError:
            raise pytest.UsageError(f"{SEED_ENV} must be an integer, got {given!r}") from None
    if running_in_ci():
        return [*fixed, _fresh_seed()]
    return list(fixed)


def _fresh_seed() -> int:
    # One fresh seed per test run, shared by every test that asks.
    if not _fresh:
        _fresh.append(random.SystemRandom().randrange(10**9))
    return _fresh[0]


def note_seed(seed: int) -> None:
    if seed not in _used:
        _used.append(seed)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _used:
        terminalreporter.write_line(
            f"interleavings: seeds {_used}; replay one with {SEED_ENV}=<seed> (e.g. {SEED_ENV}={_used[-1]})"
        )
