"""Discovering payload types from user function annotations (orchestrator inputs, activity results)."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any


def reconstructable(annotation: Any) -> bool:
    """Whether a payload should be rebuilt as ``annotation``: models, dataclasses, classes with a
    ``from_json`` hook, and containers of them.

    Builtins are left alone so plain JSON values reach user code unchanged.
    """
    if annotation is None:
        return False
    try:
        return _reconstructable(annotation)
    except TypeError:  # an unhashable annotation: answer without the cache
        return _reconstructable.__wrapped__(annotation)


@lru_cache(maxsize=1024)
def _reconstructable(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is not None:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if origin is typing.Union or origin is types.UnionType or origin in (list, Sequence, tuple):
            return any(reconstructable(a) for a in args)
        if origin is dict:
            return len(args) == 2 and reconstructable(args[1])
        return False
    if not isinstance(annotation, type):
        return False
    # A pydantic model exists only once ``pydantic.main`` was imported; looking it up instead of importing it
    # keeps pydantic's import (a tenth of a second) off the first work item of code that uses no models.
    models = sys.modules.get("pydantic.main")
    if models is not None and issubclass(annotation, models.BaseModel):
        return True
    if dataclasses.is_dataclass(annotation):
        return True
    return callable(getattr(annotation, "from_json", None))


@lru_cache(maxsize=2048)
def _signature(fn: Callable[..., Any]) -> tuple[tuple[Any, ...], Any] | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: no type information
        hints = {}
    positional = tuple(
        hints.get(p.name)
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )
    return positional, hints.get("return")


def input_type(fn: Callable[..., Any], position: int = 1) -> Any:
    """The reconstructable annotation of ``fn``'s input parameter (``(ctx, input)``), else ``None``."""
    try:
        inputs = _payload_types(fn)[0]
    except TypeError:  # unhashable callable
        return None
    return inputs[position] if position < len(inputs) else None


def output_type(fn: Callable[..., Any]) -> Any:
    """The reconstructable return annotation of ``fn``, else ``None``."""
    try:
        return _payload_types(fn)[1]
    except TypeError:  # unhashable callable
        return None


@lru_cache(maxsize=2048)
def _payload_types(fn: Callable[..., Any]) -> tuple[tuple[Any, ...], Any]:
    # Asked on every durable call and every activity or entity operation: one cache lookup per call instead of
    # a signature lookup and a type check per annotation.
    info = _signature(fn)
    if info is None:
        return (), None
    positional, result = info
    return (
        tuple(annotation if reconstructable(annotation) else None for annotation in positional),
        result if reconstructable(result) else None,
    )
