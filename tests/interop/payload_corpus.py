"""Values whose JSON text both SDKs must write identically, shared by our process and the peer's.

Each entry is ``(name, value, target_type)``; ``target_type`` is what a reader asks for (``None``: plain
JSON). The peer has no pydantic, so a model appears to it as the plain dict pydantic would dump.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import namedtuple
from types import SimpleNamespace
from typing import Any, NamedTuple

try:
    import pydantic
except ImportError:  # Microsoft's SDK does not depend on it
    pydantic = None  # type: ignore[assignment]


class Color(enum.Enum):
    RED = "red"
    GREEN = "grün"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mode(str, enum.Enum):
    FAST = "fast"


class Ratio(enum.Enum):
    HALF = 0.5


class Tuple(enum.Enum):
    PAIR = (1, 2)


@dataclasses.dataclass
class Point:
    x: int
    y: int


@dataclasses.dataclass
class Shape:
    name: str
    corners: list[Point]
    color: Color
    tag: str | None = None


class Money:
    """A class that writes and reads itself."""

    def __init__(self, cents: int, currency: str) -> None:
        self.cents, self.currency = cents, currency

    def to_json(self) -> Any:
        return {"amount": self.cents / 100, "currency": self.currency}

    @classmethod
    def from_json(cls, value: Any) -> Money:
        return cls(round(value["amount"] * 100), value["currency"])


class Wallet:
    """A ``from_json`` hook that asks for the converter to rebuild what it holds."""

    def __init__(self, coins: list[Money]) -> None:
        self.coins = coins

    def to_json(self) -> Any:
        return {"coins": self.coins}

    @classmethod
    def from_json(cls, value: Any, converter: Any) -> Wallet:
        return cls([converter.coerce(c, Money) for c in value["coins"]])


@dataclasses.dataclass
class Order:
    id: int
    price: Money
    notes: dict[str, Point]


class Pair(NamedTuple):
    left: int
    right: str


Legacy = namedtuple("Legacy", ["a", "b"])

if pydantic is not None:

    class Customer(pydantic.BaseModel):
        name: str
        tier: int
        tags: list[str] = []

    class Account(pydantic.BaseModel):
        owner: Customer
        balance: float


def customer(plain: bool) -> Any:
    fields = {"name": "Zoë", "tier": 2, "tags": ["vip", "日本"]}
    return fields if plain or pydantic is None else Customer(**fields)


def account(plain: bool) -> Any:
    fields = {"owner": customer(True), "balance": 12.5}
    return fields if plain or pydantic is None else Account(owner=Customer(**fields["owner"]), balance=12.5)


def corpus(plain_models: bool) -> list[tuple[str, Any, Any]]:
    """The values; ``plain_models`` replaces pydantic models by their dumps (for the peer)."""
    model_type = None if plain_models or pydantic is None else Customer
    account_type = None if plain_models or pydantic is None else Account
    return [
        ("none", None, None),
        ("true", True, None),
        ("false", False, None),
        ("zero", 0, None),
        ("negative", -17, None),
        ("large int", 2**70, None),
        ("huge negative int", -(10**40), None),
        ("float", 3.14159, None),
        ("float exponent", 1e-12, None),
        ("float large", 1.5e300, None),
        ("float whole", 2.0, None),
        ("empty string", "", None),
        ("ascii string", "hello", None),
        ("accented", "café é", None),
        ("cjk", "日本語", None),
        ("emoji", "🎉 party", None),
        ("escapes", 'quote " backslash \\ tab \t newline \n', None),
        ("control", "\x00\x1f\x7f", None),
        ("list", [1, 2], None),
        ("empty list", [], None),
        ("empty dict", {}, None),
        ("dict", {"a": 1, "b": [True, None]}, None),
        ("unicode keys", {"clé": "valeur", "ключ": ["значение"]}, None),
        ("nested", {"a": {"b": {"c": [1, [2, [3, {"d": "é"}]]]}}}, None),
        ("tuple", (1, "two", 3.0), None),
        ("namedtuple", Pair(1, "r"), None),
        ("collections namedtuple", Legacy(a=[1], b={"k": "v"}), None),
        ("enum str value", Color.GREEN, Color),
        ("enum in list", [Color.RED, Color.GREEN], list[Color]),
        ("int enum", Level.HIGH, Level),
        ("str enum", Mode.FAST, Mode),
        ("float enum", Ratio.HALF, Ratio),
        ("tuple enum", Tuple.PAIR, None),
        ("enum as dict value", {"color": Color.RED, "level": Level.LOW}, None),
        ("dataclass", Point(1, 2), Point),
        ("nested dataclass", Shape("tri", [Point(0, 0), Point(1, 0)], Color.RED, "é"), Shape),
        ("dataclass list", [Point(3, 4), Point(5, 6)], list[Point]),
        ("simple namespace", SimpleNamespace(a=1, b="é", c=[Point(1, 1)]), None),
        ("to_json class", Money(1250, "EUR"), Money),
        ("to_json in dataclass", Order(7, Money(99, "USD"), {"home": Point(9, 9)}), Order),
        ("from_json with converter", Wallet([Money(1, "EUR"), Money(200, "GBP")]), Wallet),
        ("optional dataclass", Point(0, 1), Point | None),
        ("pydantic model", customer(plain_models), model_type),
        ("nested pydantic model", account(plain_models), account_type),
        ("pydantic models in a dict", {"first": customer(plain_models)}, None),
        ("mixed", [None, 1, "é", Color.RED, Point(1, 2), {"n": Level.LOW}], None),
    ]
