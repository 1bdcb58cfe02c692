"""The names orchestrators, activities and entities are registered and scheduled under."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def get_name(fn: Callable[..., Any]) -> str:
    """The name a function is registered and scheduled under.

    Args:
        fn: The orchestrator, activity or entity function.

    Raises:
        ValueError: ``fn`` has no usable name (e.g. a lambda).
    """
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"Cannot infer a name from {fn!r}. Please provide a name explicitly.")
    if name == "<lambda>":
        raise ValueError("Cannot infer a name from a lambda function. Please provide a name explicitly.")
    return name


def get_entity_name(fn: Callable[..., Any] | type[Any]) -> str:
    """The name an entity function or class is registered under.

    Args:
        fn: The entity function or class; a ``__durable_entity_name__`` attribute takes precedence.

    Raises:
        ValueError: No name can be inferred.
    """
    explicit = getattr(fn, "__durable_entity_name__", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    return get_name(fn)
