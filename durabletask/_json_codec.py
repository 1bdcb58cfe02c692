"""Payload encoding: values ⇄ JSON strings, typed reconstruction, and the payload size limit."""

from __future__ import annotations

import dataclasses
import enum
import json
from types import SimpleNamespace
from typing import Any

from durabletask._coercion import coerce, pydantic_model
from durabletask._errors import NonFiniteNumberError, PayloadTooLargeError, SerializationError

#: The service's limit for one input, output, event payload, custom status or entity state.
MAX_PAYLOAD_BYTES = 1024 * 1024


#: Marker an older SDK generation put in objects it wanted decoded as ``SimpleNamespace``; histories
#: written then must still replay, so decoding honours it (nothing writes it any more).
AUTO_OBJECT_MARKER = "__durabletask_autoobject__"

#: Targets a value of exactly that type already satisfies: the parsed value is the result.
SCALAR_TYPES = frozenset({int, str, float, bool})
#: The same plus the JSON containers.
JSON_TYPES = SCALAR_TYPES | {dict, list}


def _default(value: Any) -> Any:
    # The order is Microsoft's JsonDataConverter's (a ``to_json`` hook wins over the dataclass and enum
    # handling), so both SDKs write the same text. Pydantic models are our one addition; every other value
    # the encoder cannot write (bytes, sets, datetimes, arbitrary objects) is refused, as in Microsoft's.
    to_json = getattr(type(value), "to_json", None)
    if callable(to_json):
        return to_json(value)
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Shallow, so nested values go through this hook again (their own ``to_json`` included).
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, SimpleNamespace):
        return vars(value)
    if pydantic_model(type(value)):
        return value.model_dump(mode="json")
    raise TypeError(f"Object of type '{type(value).__name__}' is not JSON serializable")


# ``json.dumps`` defaults (", " and ": ", non-ASCII escaped) are what Microsoft's SDK writes; one shared
# encoder avoids building a JSONEncoder per call (``encode`` keeps no state between calls).
_ENCODER = json.JSONEncoder(default=_default)
# The same, refusing NaN and the infinities: Python writes them as ``NaN``/``Infinity``, which is not JSON, and
# the other SDKs' parsers (.NET, Java, JavaScript) reject the whole payload.
_FINITE_ENCODER = json.JSONEncoder(default=_default, allow_nan=False)


def to_json(value: Any, *, finite: bool = False) -> str:
    """Serialize ``value`` to the JSON text Microsoft's ``JsonDataConverter`` writes for it.

    Enums become their value; dataclasses, ``SimpleNamespace`` and pydantic models become objects;
    a class's ``to_json`` hook (``type(value).to_json(value)``) returns the JSON value to write.

    With ``finite``, NaN and the infinities are refused instead of written as ``NaN``/``Infinity``.

    Raises:
        TypeError: ``value`` is, or holds, a value JSON cannot represent; the message names the type of
            ``value`` and of the value refused, in Microsoft's words.
        NonFiniteNumberError: with ``finite``, ``value`` is or holds NaN or an infinity.
    """
    try:
        return (_FINITE_ENCODER if finite else _ENCODER).encode(value)
    except TypeError as exc:
        raise TypeError(f"Failed to serialize object of type '{type(value).__name__}' to JSON: {exc}") from exc
    except ValueError as exc:
        if not finite or "JSON compliant" not in str(exc):
            raise
        raise NonFiniteNumberError(type(value).__name__) from exc


def _legacy_object(obj: dict[str, Any]) -> Any:
    if obj.pop(AUTO_OBJECT_MARKER, False):
        return SimpleNamespace(**obj)
    return obj


def _drop_legacy_marker(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop(AUTO_OBJECT_MARKER, None)
    return obj


def from_json(text: str | None, target_type: Any = None, converter: Any = None) -> Any:
    """Parse a JSON payload (``None`` or empty → ``None``), reconstructing ``target_type`` if given.

    Objects carrying the legacy auto-object marker decode to ``SimpleNamespace`` when no type is asked for.

    Raises:
        SerializationError: ``text`` is not JSON, or (with ``target_type``) its value cannot be made into
            that type (the default converter then returns the plain value instead).
    """
    if text is None or text == "":
        return None
    if AUTO_OBJECT_MARKER in text:
        hook = _legacy_object if target_type is None else _drop_legacy_marker
        value = _loads(text, hook)
    else:
        value = _loads(text, None)
    if target_type is None or (type(value) is target_type and target_type in JSON_TYPES):
        return value
    return coerce(value, target_type, converter)


def _loads(text: str, hook: Any) -> Any:
    try:
        return json.loads(text, object_hook=hook)
    except json.JSONDecodeError as exc:
        raise SerializationError(f"payload is not valid JSON ({exc.msg} at position {exc.pos})") from exc


def check_size(field: str, text: str | None, limit: int = MAX_PAYLOAD_BYTES, instance_id: str | None = None) -> None:
    """Raise :class:`PayloadTooLargeError` naming ``field`` (and the instance) when ``text`` is over ``limit`` bytes."""
    if text is None:
        return
    # Cheap path: a str of n code points is at most 4n UTF-8 bytes.
    if len(text) * 4 <= limit:
        return
    size = utf8_size(text)
    if size > limit:
        raise PayloadTooLargeError(field, size, limit, instance_id)


#: Code points encoded at a time when measuring a non-ASCII text.
_MEASURE_CHUNK = 64 * 1024


def utf8_size(text: str) -> int:
    """The UTF-8 length of ``text``, without a whole encoded copy of it (which a large payload would double)."""
    if text.isascii():  # a flag CPython keeps on every str: no scan
        return len(text)
    return sum(len(text[i : i + _MEASURE_CHUNK].encode("utf-8")) for i in range(0, len(text), _MEASURE_CHUNK))


def encode(value: Any, field: str, limit: int = MAX_PAYLOAD_BYTES) -> str | None:
    """Serialize a payload for the wire (``None`` stays absent) and enforce the size limit."""
    if value is None:
        return None
    text = to_json(value)
    check_size(field, text, limit)
    return text
