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
        info = _signature(fn)
    except TypeError:  # unhashable callable
        return None
    if info is None or len(info[0]) <= position:
        return None
    annotation = info[0][position]
    return annotation if reconstructable(annotation) else None


def output_type(fn: Callable[..., Any]) -> Any:
    """The reconstructable return annotation of ``fn``, else ``None``."""
    try:
        info = _signature(fn)
    except TypeError:
        return None
    if info is None:
        return None
    annotation = info[1]
    return annotation if reconstructable(annotation) else None
