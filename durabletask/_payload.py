"""Payload encoding: values ⇄ JSON strings, typed reconstruction, and the payload size limit."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import pydantic

from durabletask._errors import PayloadTooLargeError, SerializationError

#: The service's limit for one input, output, event payload, custom status or entity state.
MAX_PAYLOAD_BYTES = 1024 * 1024


def _default(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    to_json = getattr(type(value), "to_json", None)
    if callable(to_json):
        return to_json(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    iso = getattr(value, "isoformat", None)
    if callable(iso):
        return iso()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def to_json(value: Any) -> str:
    """Serialize ``value`` to compact JSON; pydantic models and dataclasses become objects."""
    try:
        return json.dumps(value, default=_default, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"cannot serialize {type(value).__name__} to JSON: {exc}") from exc


@lru_cache(maxsize=512)
def _adapter(target_type: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(target_type)


def coerce(value: Any, target_type: Any = None) -> Any:
    """Rebuild an already-parsed JSON value as ``target_type`` (``None`` or ``Any``: unchanged)."""
    if target_type is None or target_type is Any or value is None:
        return value
    try:
        return _adapter(target_type).validate_python(value)
    except pydantic.ValidationError as exc:
        name = getattr(target_type, "__name__", repr(target_type))
        raise SerializationError(f"payload does not match {name}: {exc}") from exc
    except TypeError:
        # Hashability or schema generation problems: fall back to the raw value.
        return value


def from_json(text: str | None, target_type: Any = None) -> Any:
    """Parse a JSON payload (``None`` or empty → ``None``), reconstructing ``target_type`` if given."""
    if text is None or text == "":
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SerializationError(f"payload is not valid JSON ({exc.msg} at position {exc.pos})") from exc
    return coerce(value, target_type)


def check_size(field: str, text: str | None, limit: int = MAX_PAYLOAD_BYTES) -> None:
    """Raise :class:`PayloadTooLargeError` naming ``field`` when ``text`` is over ``limit`` bytes."""
    if text is None:
        return
    # Cheap path: a str of n code points is at most 4n UTF-8 bytes.
    if len(text) * 4 <= limit:
        return
    size = len(text.encode("utf-8"))
    if size > limit:
        raise PayloadTooLargeError(field, size, limit)


def encode(value: Any, field: str, limit: int = MAX_PAYLOAD_BYTES) -> str | None:
    """Serialize a payload for the wire (``None`` stays absent) and enforce the size limit."""
    if value is None:
        return None
    text = to_json(value)
    check_size(field, text, limit)
    return text
