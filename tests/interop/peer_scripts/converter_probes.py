"""``JsonDataConverter`` under either SDK: what it refuses to write, what it rebuilds, and what it falls back to.

Usage: ``python converter_probes.py``; prints one JSON object mapping each case to its described result. Only
``durabletask.serialization`` is used, which both packages share.
"""

# ruff: noqa: UP007, UP045, UP037 - typing.Union/Optional and string hints are cases the converters are given

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import typing
import uuid
from collections import OrderedDict
from typing import Any, Optional, Union

from durabletask.serialization import DataConverter, JsonDataConverter

CONVERTER = JsonDataConverter()


@dataclasses.dataclass
class Point:
    x: int
    y: int


@dataclasses.dataclass
class Label:
    x: int
    text: str = "label"


@dataclasses.dataclass
class Shape:
    name: str
    corners: list[Point]
    anchor: Optional[Point] = None


@dataclasses.dataclass
class WithSet:
    values: set[int]


@dataclasses.dataclass
class Counter:
    start: int
    doubled: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        self.doubled = self.start * 2


@dataclasses.dataclass(init=False)
class LooseRecord:
    """A handwritten initializer that takes any keyword, so a recorded ``init=False`` field is passed back."""

    name: str
    seen: int = dataclasses.field(init=False, default=0)

    def __init__(self, **kwargs: Any) -> None:
        self.name = kwargs.get("name", "")
        self.seen = kwargs.get("seen", -1)


class Plain:
    def __init__(self, value: Any = None) -> None:
        self.value = value


class Money:
    def __init__(self, cents: int) -> None:
        self.cents = cents

    def to_json(self) -> Any:
        return {"cents": self.cents}

    @classmethod
    def from_json(cls, value: Any) -> Money:
        return cls(value["cents"])


class Wallet:
    """Rebuilds its nested values with the converter it is given."""

    def __init__(self, money: list[Money]) -> None:
        self.money = money

    def to_json(self) -> Any:
        return {"money": self.money}

    @classmethod
    def from_json(cls, value: Any, converter: DataConverter) -> Wallet:
        return cls([converter.coerce(m, Money) for m in value["money"]])


class Refusing:
    @classmethod
    def from_json(cls, value: Any) -> Refusing:
        raise ValueError("refused")


class SetWriter:
    def to_json(self) -> Any:
        return {1, 2}


class Color(enum.Enum):
    RED = "red"


def local_classes() -> tuple[type, type]:
    """Dataclasses defined in a function, one naming the other in a string hint that cannot be resolved."""

    @dataclasses.dataclass
    class Inner:
        value: int

    @dataclasses.dataclass
    class Outer:
        inner: Inner
        count: "int"
        rest: "list[Inner]"

    Outer.__annotations__["inner"] = "Inner"  # as ``from __future__ import annotations`` would leave it
    return Outer, Inner


def describe(value: Any) -> Any:
    kind = type(value).__name__
    if isinstance(value, dict):
        return [kind, [[describe(k), describe(v)] for k, v in value.items()]]
    if isinstance(value, (list, tuple)):
        return [kind, [describe(v) for v in value]]
    if isinstance(value, (set, frozenset)):
        return [kind, sorted(repr(v) for v in value)]
    if value is None or isinstance(value, (bool, int, float, str, bytes, decimal.Decimal, datetime.date, enum.Enum)):
        return [kind, repr(value)]
    if dataclasses.is_dataclass(value):
        return [kind, [[f.name, describe(getattr(value, f.name))] for f in dataclasses.fields(value)]]
    if hasattr(value, "__dict__"):
        return [kind, describe(vars(value))]
    return [kind]


def outcome(run: Any) -> Any:
    try:
        return {"ok": describe(run())}
    except Exception as exc:
        builtin = next(k.__name__ for k in type(exc).__mro__ if k.__module__ == "builtins")
        cause = exc.__cause__
        return {
            "error": builtin,
            "message": str(exc),
            "cause": None if cause is None else [type(cause).__name__, str(cause)],
        }


def unwritable() -> dict[str, Any]:
    return {
        "bytes": b"ab",
        "bytearray": bytearray(b"ab"),
        "set": {1},
        "frozenset": frozenset([1]),
        "object": object(),
        "plain_object": Plain(1),
        "datetime": datetime.datetime(2024, 1, 1),
        "date": datetime.date(2024, 1, 1),
        "timedelta": datetime.timedelta(seconds=1),
        "decimal": decimal.Decimal("1.5"),
        "uuid": uuid.UUID(int=1),
        "complex": 1j,
        "range": range(3),
        "set_in_dict": {"a": {1}},
        "bytes_in_list": [b"x"],
        "set_in_dataclass": WithSet({1}),
        "hook_returning_a_set": SetWriter(),
        "plain_in_dataclass_list": [Point(1, 2), Plain()],
    }


def writable() -> dict[str, Any]:
    return {
        "ordered": OrderedDict(a=1),
        "tuple": (1, "a"),
        "enum": Color.RED,
        "hooked": Money(5),
        "nested_hooks": Wallet([Money(1), Money(2)]),
        "dataclass": Shape("sq", [Point(0, 0)], Point(1, 1)),
        "non_init_field": Counter(3),
    }


def rebuilt() -> list[tuple[str, str, Any]]:
    outer, _ = local_classes()
    return [
        ("int_from_str", '"5"', int),
        ("str_from_int", "5", str),
        ("bool_from_str", '"false"', bool),
        ("float_from_int", "5", float),
        ("int_from_float", "5.7", int),
        ("int_from_object", '{"a": 1}', int),
        ("int_from_bool", "true", int),
        ("list_from_object", '{"a": 1}', list),
        ("list_from_str", '"ab"', list),
        ("tuple_from_str", '"ab"', tuple),
        ("dict_from_list", "[1]", dict),
        ("str_from_list", "[1]", str),
        ("bytes_from_str", '"ab"', bytes),
        ("datetime_from_iso", '"2024-01-01T00:00:00"', datetime.datetime),
        ("decimal_from_str", '"1.5"', decimal.Decimal),
        ("enum", '"red"', Color),
        ("enum_unknown", '"blue"', Color),
        ("plain_class", '{"value": 2}', Plain),
        ("plain_class_scalar", "2", Plain),
        ("dataclass", '{"x": 1, "y": 2}', Point),
        ("dataclass_from_str", '"x"', Point),
        ("dataclass_missing_field", '{"x": 1}', Point),
        ("dataclass_extra_field", '{"x": 1, "y": 2, "z": 3}', Point),
        ("dataclass_wrong_field_types", '{"x": "a", "y": "b"}', Point),
        ("dataclass_from_list", "[1, 2]", Point),
        ("nested_dataclasses", '{"name": "s", "corners": [{"x": 1, "y": 2}], "anchor": {"x": 0, "y": 0}}', Shape),
        ("nested_dataclass_bad", '{"name": "s", "corners": [1]}', Shape),
        ("non_init_field_generated", '{"start": 2, "doubled": 99}', Counter),
        ("non_init_field_kwargs", '{"name": "n", "seen": 7}', LooseRecord),
        ("local_unresolvable_hint", '{"inner": {"value": 1}, "count": "3", "rest": [{"value": 2}]}', outer),
        ("hook", '{"cents": 3}', Money),
        ("hook_with_converter", '{"money": [{"cents": 1}]}', Wallet),
        ("hook_raising", '{"a": 1}', Refusing),
        ("union_of_dataclasses", '{"x": 1, "y": 2}', Union[Point, Label]),
        ("union_of_dataclasses_second", '{"x": 1, "text": "t"}', Union[Point, Label]),
        ("union_pipe", '{"x": 1, "y": 2}', Point | Label),
        ("union_int_or_dataclass", '{"x": 1, "y": 2}', Union[int, Point]),
        ("union_of_scalars", '"5"', Union[int, float]),
        ("union_with_a_match", "5", Union[int, str]),
        ("optional_dataclass", '{"x": 1, "y": 2}', Optional[Point]),
        ("optional_scalar", '"5"', Optional[int]),
        ("list_of_unions", '[{"x": 1, "y": 2}]', list[Union[Point, Label]]),
        ("list_of_dataclasses", '[{"x": 1, "y": 2}]', list[Point]),
        ("list_of_dataclasses_bad", "[1]", list[Point]),
        ("list_of_int_from_str", '["1", "2"]', list[int]),
        ("dict_of_dataclasses", '{"a": {"x": 1, "y": 2}}', dict[str, Point]),
        ("tuple_fixed", '[1, "2"]', tuple[int, int]),
        ("tuple_fixed_wrong_length", "[1, 2, 3]", tuple[int, int]),
        ("tuple_variadic", '[{"x": 1, "y": 2}]', tuple[Point, ...]),
        ("set_target", "[1, 2]", set),
        ("set_of_int_target", "[1, 2]", set[int]),
        ("literal", '"a"', typing.Literal["a"]),
        ("any", '{"a": 1}', Any),
        ("legacy_marker_typed", '{"__durabletask_autoobject__": true, "x": 1, "y": 2}', Point),
        ("not_json", "not json", Point),
        ("not_json_untyped", "not json", None),
    ]


def probe() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in unwritable().items():
        out[f"serialize:{name}"] = outcome(lambda value=value: CONVERTER.serialize(value))
    for name, value in writable().items():
        out[f"serialize:{name}"] = outcome(lambda value=value: CONVERTER.serialize(value))
    for name, text, target in rebuilt():
        out[f"deserialize:{name}"] = outcome(lambda text=text, target=target: CONVERTER.deserialize(text, target))
        try:
            parsed = json.loads(text)
        except ValueError:
            continue
        out[f"coerce:{name}"] = outcome(lambda parsed=parsed, target=target: CONVERTER.coerce(parsed, target))
    outer, _ = local_classes()
    for label, target in {
        "dataclass": Point, "local_dataclass": outer, "hook": Money, "plain_class": Plain, "int": int,
        "union": Union[Point, Label], "optional": Optional[Point], "list": list[Point],
        "sequence": typing.Sequence[Point], "dict": dict[str, Point], "tuple": tuple[Point, int],
        "list_of_int": list[int], "none": None, "any": Any,
    }.items():  # fmt: skip
        out[f"can_reconstruct:{label}"] = outcome(lambda target=target: CONVERTER.can_reconstruct(target))
    return out


if __name__ == "__main__":
    print(json.dumps(probe()))
