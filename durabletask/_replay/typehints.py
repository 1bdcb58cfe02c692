"""Reading payload types from user function annotations (orchestrator and activity inputs, activity results).

As in Microsoft's type discovery, only the annotation is found here; the converter in use decides whether
payloads are rebuilt as it (``DataConverter.can_reconstruct``).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from functools import lru_cache
from typing import Any


def _annotation(raw: Any, name: str, hints: dict[str, Any] | None) -> Any:
    """The resolved annotation of one parameter (or ``return``), ``None`` when there is nothing to go by."""
    annotation = hints[name] if hints is not None and name in hints else raw
    if isinstance(annotation, str):  # a postponed annotation that could not be resolved
        return None
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    return annotation


@lru_cache(maxsize=2048)
def _payload_types(fn: Callable[..., Any]) -> tuple[tuple[Any, ...], Any]:
    # Asked on every durable call and every activity or entity operation: one cache lookup per call.
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return (), None
    try:
        hints: dict[str, Any] | None = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: the annotations that are not strings still count
        hints = None
    positional = tuple(
        _annotation(p.annotation, p.name, hints)
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )
    return positional, _annotation(signature.return_annotation, "return", hints)


def input_type(fn: Callable[..., Any], position: int = 1) -> Any:
    """The annotation of ``fn``'s input parameter (``(ctx, input)``), else ``None``.

    Whether the payload is rebuilt as it is the converter's decision (``Codec.payload_type``).
    """
    try:
        inputs = _payload_types(fn)[0]
    except TypeError:  # unhashable callable
        inputs = _payload_types.__wrapped__(fn)[0]
    return inputs[position] if position < len(inputs) else None


def output_type(fn: Callable[..., Any]) -> Any:
    """The return annotation of ``fn`` (``None`` for none, ``-> None`` or ``Any``)."""
    try:
        return _payload_types(fn)[1]
    except TypeError:  # unhashable callable
        return _payload_types.__wrapped__(fn)[1]
