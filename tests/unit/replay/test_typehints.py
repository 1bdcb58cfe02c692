"""Payload types read from annotations (the converter decides what is rebuilt); asking again is one cache lookup."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from durabletask._codec import Codec
from durabletask._replay import typehints
from durabletask.serialization import JsonDataConverter


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


def later_and_unresolvable(ctx: Any, order: Order, other: Missing) -> Order:  # type: ignore[name-defined] # noqa: F821
    return order


def test_annotations_are_found_and_the_converter_decides_what_is_rebuilt() -> None:
    assert typehints.input_type(typed) is Order
    assert typehints.output_type(typed) == list[Order]
    assert typehints.input_type(plain) is int and typehints.output_type(plain) is int
    assert typehints.input_type(bare) is None and typehints.output_type(bare) is None
    assert typehints.input_type(typed, 5) is None  # no such parameter
    # A callable object's postponed annotations cannot be resolved from the object (Microsoft's finds none either).
    assert typehints.input_type(Unhashable()) is None and typehints.output_type(Unhashable()) is None
    # One name that cannot be resolved: with postponed annotations (this module's) none can be read, as in
    # Microsoft's type discovery.
    assert typehints.input_type(later_and_unresolvable) is None
    codec = Codec()
    assert codec.payload_type(Order) is Order and codec.payload_type(list[Order]) == list[Order]
    assert codec.payload_type(int) is None and codec.payload_type(dict[str, Order]) is None


class NothingRebuilt(JsonDataConverter):
    def can_reconstruct(self, target_type: Any) -> bool:
        return False


def test_a_converter_that_rebuilds_nothing_gets_no_types() -> None:
    # As in Microsoft's type discovery: the converter in use is asked, not the default's policy.
    assert Codec(NothingRebuilt()).payload_type(Order) is None


def test_asking_again_does_not_check_the_annotations_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Asked on every durable call of a replay: the answer per function is kept, not recomputed per call.
    def later(ctx: Any, order: Order) -> Order:
        return order

    assert typehints.output_type(later) is Order and typehints.input_type(later) is Order

    def refuse(fn: Any) -> Any:
        raise AssertionError("annotations read again")

    monkeypatch.setattr(typehints.inspect, "signature", refuse)
    assert typehints.output_type(later) is Order
    assert typehints.input_type(later) is Order
