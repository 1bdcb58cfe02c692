"""The context manager an orchestration holds while it owns entity locks."""

from __future__ import annotations

from typing import Any

__all__ = ["EntityLock"]


class EntityLock:
    """Returned by ``lock_entities``; leaving the ``with`` block releases every lock it holds.

    Locks still held when the orchestration completes, fails, is terminated or continues as new are
    released too, so forgetting the ``with`` block cannot leak them.
    """

    def __init__(self, context: Any) -> None:
        self._context = context

    def __enter__(self) -> EntityLock:
        return self

    def __exit__(self, *args: object) -> None:
        self._context._exit_critical_section()
