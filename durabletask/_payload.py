"""Payload encoding: values ⇄ JSON strings, typed reconstruction, and the payload size limit."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import types
import typing
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import pydantic

from durabletask._errors import PayloadTooLargeError, SerializationError

#: The service's limit for one input, output, event payload, custom status or entity state.
MAX_PAYLOAD_BYTES = 1024 * 1024


#: Marker an older SDK generation put in objects it wanted decoded as ``SimpleNamespace``; histories
#: written then must still replay, so decoding honours it (nothing writes it any more).
AUTO_OBJECT_MARKER = "__durabletask_autoobject__"

#: Targets a value of exactly that type already satisfies: pydantic would hand back the very same object, so it
#: is not asked (a validator call per payload, e.g. per entity operation reading ``get_state(int)``).
SCALAR_TYPES = frozenset({int, str, float, bool})
#: The same plus the JSON containers: pydantic would return a shallow copy of a dict or list, which only a
#: value fresh from parsing (that nothing else holds) may skip.
JSON_TYPES = SCALAR_TYPES | {dict, list}


def _default(value: Any) -> Any:
    # The order is Microsoft's JsonDataConverter's (a ``to_json`` hook wins over the dataclass and enum
    # handling), so both SDKs write the same text; the branches after SimpleNamespace are ours alone
    # (Microsoft's converter refuses those values).
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
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    iso = getattr(value, "isoformat", None)
    if callable(iso):
        return iso()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# ``json.dumps`` defaults (", " and ": ", non-ASCII escaped) are what Microsoft's SDK writes; one shared
# encoder avoids building a JSONEncoder per call (``encode`` keeps no state between calls).
_ENCODER = json.JSONEncoder(default=_default)


def to_json(value: Any) -> str:
    """Serialize ``value`` to the JSON text Microsoft's ``JsonDataConverter`` writes for it.

    Enums become their value; dataclasses, ``SimpleNamespace`` and pydantic models become objects;
    a class's ``to_json`` hook (``type(value).to_json(value)``) returns the JSON value to write.
    """
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"cannot serialize {type(value).__name__} to JSON: {exc}") from exc


def _legacy_object(obj: dict[str, Any]) -> Any:
    if obj.pop(AUTO_OBJECT_MARKER, False):
        return SimpleNamespace(**obj)
    return obj


def _drop_legacy_marker(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop(AUTO_OBJECT_MARKER, None)
    return obj


@lru_cache(maxsize=512)
def _adapter(target_type: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(target_type)


@lru_cache(maxsize=1024)
def _hook_takes_converter(hook: Any) -> bool:
    # A ``from_json(cls, value, converter)`` hook asks for the converter by naming its second parameter so.
    try:
        parameters = list(inspect.signature(hook).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].name == "converter"


def _call_from_json(hook: Any, value: Any, converter: Any) -> Any:
    try:
        takes_converter = _hook_takes_converter(hook)
    except TypeError:  # an unhashable hook
        takes_converter = False
    if not takes_converter:
        return hook(value)
    if converter is None:  # callers pass the active converter; only direct use of this module lacks one
        raise SerializationError(f"{hook.__qualname__} asks for a converter and none was given")
    return hook(value, converter)


def _coerce_generic(value: Any, target_type: Any, converter: Any) -> Any:
    origin = typing.get_origin(target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if any(a is Any or (isinstance(a, type) and isinstance(value, a)) for a in members):
            return value
        return coerce(value, members[0], converter) if len(members) == 1 else value
    if origin in (list, Sequence) and isinstance(value, list):
        item = args[0] if args else None
        return [coerce(v, item, converter) for v in value]
    if origin in (dict, Mapping) and isinstance(value, dict):
        item = args[1] if len(args) == 2 else None
        return {k: coerce(v, item, converter) for k, v in value.items()}
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce(v, args[0], converter) for v in value)
        if args and len(args) != len(value):
            raise SerializationError(f"a JSON array of {len(value)} items does not match {target_type}")
        return tuple(coerce(v, t, converter) for v, t in zip(value, args, strict=True)) if args else tuple(value)
    return value


@lru_cache(maxsize=1024)
def _uses_hooks(target_type: Any) -> bool:
    """Whether ``target_type`` is, or holds, a class with a ``from_json`` hook (pydantic cannot build those)."""
    return _holds_hooks(target_type, set())


def _holds_hooks(target_type: Any, seen: set[type]) -> bool:
    if not isinstance(target_type, type):
        return any(_holds_hooks(a, seen) for a in typing.get_args(target_type) if a is not Ellipsis)
    if target_type in seen:
        return False
    seen.add(target_type)
    if callable(getattr(target_type, "from_json", None)):
        return not issubclass(target_type, pydantic.BaseModel)
    if not dataclasses.is_dataclass(target_type):
        return False
    try:
        hints = typing.get_type_hints(target_type)
    except Exception:  # unresolvable forward references: nothing to find
        return False
    return any(_holds_hooks(hint, seen) for hint in hints.values())


def _build_dataclass(cls: Any, data: dict[str, Any], converter: Any) -> Any:
    # Field by field, so a field whose class has a ``from_json`` hook is built by that hook.
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    return cls(
        **{f.name: coerce(data[f.name], hints.get(f.name), converter) for f in fields if f.init and f.name in data}
    )


def coerce(value: Any, target_type: Any = None, converter: Any = None) -> Any:
    """Rebuild an already-parsed JSON value as ``target_type`` (``None`` or ``Any``: unchanged).

    A class with a ``from_json`` hook is built by the hook (given ``converter`` when its second
    parameter is named so); everything else is validated by pydantic.
    """
    if target_type is None or target_type is Any or value is None:
        return value
    if type(value) is target_type and target_type in SCALAR_TYPES:
        return value
    try:
        hooks = _uses_hooks(target_type)
    except TypeError:  # an unhashable annotation
        hooks = False
    if hooks:
        if not isinstance(target_type, type):
            return _coerce_generic(value, target_type, converter)
        if isinstance(value, target_type):
            return value
        hook = getattr(target_type, "from_json", None)
        if callable(hook):
            return _call_from_json(hook, value, converter)
        if isinstance(value, dict):
            return _build_dataclass(target_type, value, converter)
        raise SerializationError(f"payload does not match {target_type.__name__}: expected a JSON object")
    try:
        adapter = _adapter(target_type)
    except TypeError:
        # An unhashable annotation or one pydantic cannot describe: there is nothing to rebuild with.
        return value
    try:
        return adapter.validate_python(value)
    except (pydantic.ValidationError, TypeError) as exc:
        # A TypeError here comes from the type's own code (e.g. ``__post_init__``) refusing the payload.
        name = getattr(target_type, "__name__", repr(target_type))
        raise SerializationError(f"payload does not match {name}: {exc}") from exc


def from_json(text: str | None, target_type: Any = None, converter: Any = None) -> Any:
    """Parse a JSON payload (``None`` or empty → ``None``), reconstructing ``target_type`` if given.

    Objects carrying the legacy auto-object marker decode to ``SimpleNamespace`` when no type is asked for.
    """
    if text is None or text == "":
        return None
    if AUTO_OBJECT_MARKER in text:
        hook = _legacy_object if target_type is None else _drop_legacy_marker
        value = _loads(text, hook)
    else:
        value = _loads(text, None)
    if type(value) is target_type and target_type in JSON_TYPES:
        return value  # just parsed: no one else holds it, so the copy coerce() would make is not needed
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
