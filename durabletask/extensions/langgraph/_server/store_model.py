"""The store's rules: what a namespace, a key, a value and a filter may be, where an item lives, what matches.

No I/O: the HTTP routes and the graphs' ``BaseStore`` both check and match with these functions, so the two see
one store with one set of limits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from durabletask.entities import EntityInstanceId
from durabletask.extensions.langgraph._server.store_records import STORE_ENTITY

NAMESPACE_MAX_LABELS = 20
"""The most labels a namespace holds."""
LABEL_MAX_CHARS = 256
"""The longest namespace label."""
KEY_MAX_CHARS = 1024
"""The longest item key."""
VALUE_MAX_BYTES = 512 * 1024
"""The largest item value, in bytes of JSON: an item is one entity state, under DTS's 1 MB payload cap."""
FILTER_MAX_BYTES = 16 * 1024
"""The largest search filter, in bytes of JSON."""
TTL_MAX_MINUTES = 10 * 365 * 24 * 60
"""The longest time-to-live of an item (ten years), in minutes."""
_INDEXED_LEVELS = 6
# Each of the first namespace levels adds 6 hex digits to the entity key, so a search under a prefix of up to six
# labels asks the backend only for the entities under it (a clash of digits only adds items that are filtered out).
_LEVEL_DIGITS = 6
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


class StoreInputError(ValueError):
    """A namespace, key, value or filter the store refuses; the message names the field and the limit."""


def check_namespace(value: Any, field: str, *, allow_empty: bool = False) -> tuple[str, ...]:
    """A namespace as a tuple of labels.

    Args:
        value: The list (or tuple) of labels.
        field: The field's name, for the message.
        allow_empty: Whether ``[]`` is accepted (a prefix or a suffix; it matches everything). An item's own
            namespace (``allow_empty=False``) cannot start with the reserved label ``langgraph``.

    Raises:
        StoreInputError: Not a list of non-empty strings without ``.``, too many or too long labels.
    """
    if not isinstance(value, (list, tuple)):
        raise StoreInputError(f"field '{field}' must be a list of strings, got {type(value).__name__}")
    if not value and not allow_empty:
        raise StoreInputError(f"field '{field}' cannot be empty: an item's namespace has at least one label")
    if len(value) > NAMESPACE_MAX_LABELS:
        raise StoreInputError(f"field '{field}' has {len(value)} labels; the limit is {NAMESPACE_MAX_LABELS}")
    for index, label in enumerate(value):
        if not isinstance(label, str):
            raise StoreInputError(f"field '{field}[{index}]' must be a string, got {type(label).__name__}")
        if not label:
            raise StoreInputError(f"field '{field}[{index}]' cannot be an empty string")
        if len(label) > LABEL_MAX_CHARS:
            raise StoreInputError(
                f"field '{field}[{index}]' is {len(label)} characters long; the limit is {LABEL_MAX_CHARS}"
            )
        if "." in label:
            raise StoreInputError(f"field '{field}[{index}]' cannot contain '.' (the SDK joins labels with it)")
        _check_chars(label, f"{field}[{index}]")
    if not allow_empty and value[0] == "langgraph":
        raise StoreInputError(f"field '{field}': the root label 'langgraph' is reserved")
    return tuple(value)


def check_key(value: Any, field: str = "key") -> str:
    """An item key: a non-empty string of at most ``KEY_MAX_CHARS``."""
    if not isinstance(value, str):
        raise StoreInputError(f"field '{field}' must be a string, got {type(value).__name__}")
    if not value:
        raise StoreInputError(f"field '{field}' cannot be empty")
    if len(value) > KEY_MAX_CHARS:
        raise StoreInputError(f"field '{field}' is {len(value)} characters long; the limit is {KEY_MAX_CHARS}")
    _check_chars(value, field)
    return value


def _check_chars(text: str, field: str) -> None:
    if "\x00" in text:
        raise StoreInputError(f"field '{field}' cannot contain the NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StoreInputError(
            f"field '{field}' holds a lone surrogate (e.g. \\ud800), which UTF-8 cannot hold"
        ) from None


def check_value(value: Any, field: str = "value") -> dict[str, Any]:
    """An item value: a JSON object of at most ``VALUE_MAX_BYTES``."""
    if not isinstance(value, dict):
        raise StoreInputError(f"field '{field}' must be a JSON object, got {type(value).__name__}")
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError) as error:
        raise StoreInputError(f"field '{field}' is not JSON: {error}") from None
    if size > VALUE_MAX_BYTES:
        raise StoreInputError(f"field '{field}' is {size} bytes of JSON; the limit is {VALUE_MAX_BYTES}")
    return value


def check_ttl(value: Any, field: str = "ttl") -> float | None:
    """A time-to-live in minutes (``None``: the item never expires)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise StoreInputError(f"field '{field}' must be a number of minutes or null, got {type(value).__name__}")
    if not 0 < value <= TTL_MAX_MINUTES:
        raise StoreInputError(f"field '{field}' must be more than 0 and at most {TTL_MAX_MINUTES} minutes")
    return float(value)


def check_filter(value: Any, field: str = "filter") -> dict[str, Any] | None:
    """A search filter: ``{field: value}`` (equality) or ``{field: {"$gt": value, ...}}`` (comparisons)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise StoreInputError(f"field '{field}' must be a JSON object, got {type(value).__name__}")
    if len(json.dumps(value, default=str)) > FILTER_MAX_BYTES:
        raise StoreInputError(f"field '{field}' is over {FILTER_MAX_BYTES} bytes of JSON")
    for name, condition in value.items():
        if isinstance(condition, dict) and any(str(k).startswith("$") for k in condition):
            unknown = [k for k in condition if k not in _OPERATORS]
            if unknown:
                raise StoreInputError(
                    f"field '{field}.{name}' uses the operator {unknown[0]!r}; known: {', '.join(_OPERATORS)}"
                )
    return value


def _digest(value: Any, digits: int) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False).encode("utf-8")).hexdigest()[:digits]


def _levels(namespace: Sequence[str]) -> str:
    depth = min(len(namespace), _INDEXED_LEVELS)
    return "".join(_digest(list(namespace[: i + 1]), _LEVEL_DIGITS) for i in range(depth))


def item_entity(namespace: Sequence[str], key: str) -> EntityInstanceId:
    """The entity holding the item ``(namespace, key)``: at most 80 characters whatever their lengths."""
    return EntityInstanceId(STORE_ENTITY, f"{_levels(namespace)}~{_digest([list(namespace), key], 32)}")


def entity_prefix(prefix: Sequence[str]) -> str:
    """The entity-ID prefix every item under the namespace ``prefix`` has (wildcards end what is indexed)."""
    fixed: list[str] = []
    for label in prefix[:_INDEXED_LEVELS]:
        if label == "*":
            break
        fixed.append(label)
    return f"@{STORE_ENTITY}@{_levels(fixed)}"


def matches_condition(namespace: Sequence[str], condition: Sequence[str], *, suffix: bool = False) -> bool:
    """Whether ``namespace`` starts (or ends) with ``condition``, where ``"*"`` matches any one label."""
    if len(condition) > len(namespace):
        return False
    part = namespace[len(namespace) - len(condition) :] if suffix else namespace[: len(condition)]
    return all(want in ("*", have) for want, have in zip(condition, part, strict=True))


def _compare(have: Any, operator: str, want: Any) -> bool:
    if operator == "$eq":
        return bool(have == want)
    if operator == "$ne":
        return bool(have != want)
    try:
        if operator == "$gt":
            return bool(have > want)
        if operator == "$gte":
            return bool(have >= want)
        if operator == "$lt":
            return bool(have < want)
        return bool(have <= want)
    except TypeError:
        return False  # values of kinds that do not order (a string against a number) never match


def matches_filter(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes every condition of a filter (as LangGraph's in-memory store filters)."""
    for name, condition in (conditions or {}).items():
        have = value.get(name)
        if isinstance(condition, dict) and condition and all(str(k).startswith("$") for k in condition):
            if not all(_compare(have, op, want) for op, want in condition.items()):
                return False
        elif have != condition:
            return False
    return True


def list_namespaces(
    found: Iterable[Sequence[str]],
    *,
    prefix: Sequence[str] | None,
    suffix: Sequence[str] | None,
    max_depth: int | None,
) -> list[list[str]]:
    """The distinct namespaces (cut at ``max_depth``) among ``found`` matching ``prefix`` and ``suffix``, sorted."""
    chosen: set[tuple[str, ...]] = set()
    for namespace in found:
        if prefix and not matches_condition(namespace, prefix):
            continue
        if suffix and not matches_condition(namespace, suffix, suffix=True):
            continue
        chosen.add(tuple(namespace[:max_depth] if max_depth is not None else namespace))
    return [list(namespace) for namespace in sorted(chosen)]


def item_json(record: Mapping[str, Any]) -> dict[str, Any]:
    """An item as the SDK reads it: ``namespace``, ``key``, ``value``, ``created_at``, ``updated_at``."""
    return {
        "namespace": list(record["namespace"]),
        "key": record["key"],
        "value": record["value"],
        "created_at": record["created_at"],
        "updated_at": record["updated_at"],
    }
