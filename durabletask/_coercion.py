"""Rebuilding parsed JSON values as the types callers ask for, by the rules of Microsoft's ``JsonDataConverter``.

The rules, in order: ``None`` and ``Any`` ask for nothing; generics (``Optional``/``Union``, ``list``,
``dict``, ``tuple``) are handled member by member; a value that already is an instance is kept; a class with a
``from_json`` hook is built by it; a dataclass from a JSON object, field by field; a pydantic model is
validated by pydantic (our addition: Microsoft's converter cannot build one); any other class is called with
the value (``str(5)``, ``int(5.7)``, ``list("ab")``, as in Microsoft's). Failures raise; the converter turns
them into "return the raw value".
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from durabletask._errors import SerializationError


def pydantic_model(target: Any) -> bool:
    """Whether ``target`` is a pydantic model class (without importing pydantic: a model exists only once it is)."""
    models = sys.modules.get("pydantic.main")
    return models is not None and isinstance(target, type) and issubclass(target, models.BaseModel)


def coerce(value: Any, target: Any, converter: Any = None) -> Any:
    """``value`` (already parsed JSON) rebuilt as ``target``.

    Raises:
        SerializationError: the value cannot be made into ``target`` (a ``from_json`` hook or a constructor
            may also raise errors of their own).
    """
    if target is None or value is None or target is Any:
        return value
    origin = typing.get_origin(target)
    if origin is not None:
        return _coerce_generic(value, target, origin, converter)
    if not isinstance(target, type):
        return value  # a special form with nothing to build (e.g. a bare TypeVar)
    if isinstance(value, target):
        return value
    hook = getattr(target, "from_json", None)
    if callable(hook):
        return _call_hook(hook, value, converter)
    if dataclasses.is_dataclass(target) and isinstance(value, dict):
        return _build_dataclass(target, value, converter)
    if pydantic_model(target):
        return _validate_model(target, value)
    try:
        return target(value)
    except Exception as exc:
        raise SerializationError(
            f"Could not coerce value of type '{type(value).__name__}' to '{target.__name__}'"
        ) from exc


def _coerce_generic(value: Any, target: Any, origin: Any, converter: Any) -> Any:
    args = typing.get_args(target)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if any(m is Any or (isinstance(m, type) and isinstance(value, m)) for m in members):
            return value
        # Only Optional[T] names one type to build; which member of a real union a payload is meant to be,
        # the payload does not say, and guessing would build the wrong one.
        return coerce(value, members[0], converter) if len(members) == 1 else value
    if origin in (list, Sequence) and isinstance(value, list):
        item = args[0] if args else None
        return [coerce(v, item, converter) for v in value]
    if origin in (dict, Mapping) and isinstance(value, dict):
        if len(args) != 2:
            return value
        return {k: coerce(v, args[1], converter) for k, v in value.items()}
    if origin is tuple and isinstance(value, list):
        return _coerce_tuple(value, args, converter)
    return value


def _coerce_tuple(value: list[Any], args: tuple[Any, ...], converter: Any) -> tuple[Any, ...]:
    if not args:
        return tuple(value)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(coerce(v, args[0], converter) for v in value)
    if len(args) != len(value):
        raise SerializationError(f"Could not coerce JSON array of length {len(value)} to tuple of length {len(args)}")
    return tuple(coerce(v, t, converter) for v, t in zip(value, args, strict=True))


def _validate_model(target: type, value: Any) -> Any:
    try:
        return target.model_validate(value)  # type: ignore[attr-defined]
    except Exception as exc:
        raise SerializationError(f"payload does not match {target.__name__}: {exc}") from exc


@lru_cache(maxsize=2048)
def _takes_converter(hook: Any) -> bool:
    # A ``from_json(cls, value, converter)`` hook asks for the converter by naming its second parameter so.
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].name == "converter"


def _call_hook(hook: Any, value: Any, converter: Any) -> Any:
    if converter is None:
        return hook(value)
    try:
        wants = _takes_converter(hook)
    except TypeError:  # an unhashable hook: ask without the cache
        wants = _takes_converter.__wrapped__(hook)
    return hook(value, converter) if wants else hook(value)


def _build_dataclass(cls: type, data: dict[str, Any], converter: Any) -> Any:
    # A hint that cannot be resolved (e.g. a class defined inside a function, named in a string) leaves every
    # field as parsed, as in Microsoft's: the dataclass is still built, from the raw field values.
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        hints = {}
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in data and (f.init or _initializer_takes(cls, f.name)):
            kwargs[f.name] = coerce(data[f.name], hints.get(f.name), converter)
    return cls(**kwargs)


def _initializer_takes(cls: type, name: str) -> bool:
    """Whether a recorded ``init=False`` field is passed back to ``cls``'s initializer.

    Only a handwritten initializer that accepts it as a keyword (by name or through ``**kwargs``) gets it,
    never under the name of its receiver; the generated one takes none, so such fields keep their defaults
    (or what ``__post_init__`` computes).
    """
    initializer = typing.cast(Any, cls).__init__
    try:
        keywords, receiver = _keywords(initializer)
    except TypeError:  # an unhashable initializer
        keywords, receiver = _keywords.__wrapped__(initializer)
    if keywords is not None and name not in keywords:
        return False
    has_receiver = (inspect.isfunction(initializer) or inspect.ismethoddescriptor(initializer)) and not isinstance(
        inspect.getattr_static(cls, "__init__"), staticmethod
    )
    return not (has_receiver and name == receiver)


@lru_cache(maxsize=256)
def _keywords(initializer: Any) -> tuple[frozenset[str] | None, str | None]:
    """The initializer's keyword names (``None``: any, or its signature is unknown) and its first parameter."""
    try:
        parameters = list(inspect.signature(initializer, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return None, None
    first = parameters[0] if parameters else None
    receiver = first.name if first is not None and first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD else None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None, receiver
    return frozenset(p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)), receiver


def reconstructable(target: Any) -> bool:
    """Whether the default converter rebuilds payloads annotated ``target`` (Microsoft's ``can_reconstruct``).

    Dataclasses, classes with a ``from_json`` hook and pydantic models (our addition), and ``Optional``/
    ``Union``, ``list`` and ``Sequence`` of them. Builtins, other generics and unknown annotations are left
    alone, so plain JSON values reach user code unchanged.
    """
    if target is None:
        return False
    try:
        return _reconstructable(target)
    except TypeError:  # an unhashable annotation: answer without the cache
        return _reconstructable.__wrapped__(target)


@lru_cache(maxsize=1024)
def _reconstructable(target: Any) -> bool:
    origin = typing.get_origin(target)
    if origin is not None:
        args = typing.get_args(target)
        if origin is typing.Union or origin is types.UnionType:
            return any(reconstructable(a) for a in args if a is not type(None))
        if origin in (list, Sequence):
            return any(reconstructable(a) for a in args)
        return False
    if not isinstance(target, type):
        return False
    if dataclasses.is_dataclass(target) or pydantic_model(target):
        return True
    return callable(getattr(target, "from_json", None))
