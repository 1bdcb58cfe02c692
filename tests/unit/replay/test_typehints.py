"""Payload types read from annotations: what is rebuilt, and that asking again costs one cache lookup."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from durabletask._replay import typehints


@dataclasses.dataclass
class Order:
    item: str


def typed(ctx: Any, order: Order) -> list[Order]:
    return [order]


def plain(ctx: Any, value: int) -> int:
    return value


def bare(ctx, value):  # type: ignore[no-untyped-def]
    return value


class Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, ctx: Any, order: Order) -> Order:
        return order


def test_reconstructable_annotations_are_found_and_builtins_left_alone() -> None:
    assert typehints.input_type(typed) is Order
    assert typehints.output_type(typed) == list[Order]
    assert typehints.input_type(plain) is None and typehints.output_type(plain) is None
    assert typehints.input_type(bare) is None and typehints.output_type(bare) is None
    assert typehints.input_type(typed, 5) is None  # no such parameter
    assert typehints.input_type(Unhashable()) is None and typehints.output_type(Unhashable()) is None


def test_asking_again_does_not_check_the_annotations_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Asked on every durable call of a replay: the answer per function is kept, not recomputed per call.
    def later(ctx: Any, order: Order) -> Order:
        return order

    assert typehints.output_type(later) is Order and typehints.input_type(later) is Order

    def refuse(annotation: Any) -> bool:
        raise AssertionError("annotations checked again")

    monkeypatch.setattr(typehints, "reconstructable", refuse)
    assert typehints.output_type(later) is Order
    assert typehints.input_type(later) is Order
