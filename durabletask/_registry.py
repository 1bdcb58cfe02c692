"""Names → user functions: how functions are named, registered and looked up, and the errors for each.

It sits below the replay core (which looks orchestrators up), the worker (which registers and runs functions)
and the client (which schedules by the same names), so none of them needs another for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from durabletask._errors import DurableTaskError

# The public home of the "not registered" errors is ``durabletask.worker``; reporting that module keeps the
# error types recorded in failure details identical to the ones other SDKs and tools expect.
_PUBLIC_MODULE = "durabletask.worker"


class RegistrationError(DurableTaskError, ValueError):
    """A function could not be registered (missing, unnamed, or a duplicate name)."""


class OrchestratorNotRegisteredError(DurableTaskError, ValueError):
    """A work item named an orchestrator this worker has no function for."""


class ActivityNotRegisteredError(DurableTaskError, ValueError):
    """A work item named an activity this worker has no function for."""


class EntityNotRegisteredError(DurableTaskError, ValueError):
    """A work item named an entity this worker has no function or class for."""


for _cls in (OrchestratorNotRegisteredError, ActivityNotRegisteredError, EntityNotRegisteredError):
    _cls.__module__ = _PUBLIC_MODULE


def function_name(fn: Callable[..., Any] | type[Any]) -> str:
    """The name a function or class is registered and scheduled under (its ``__name__``)."""
    name = getattr(fn, "__durabletask_name__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name:
        raise RegistrationError(f"cannot derive a name from {fn!r}; pass an explicit name")
    return name


class Registry:
    """What can be run, by name. Entity names are case-insensitive and stored lower-case."""

    def __init__(self) -> None:
        self.orchestrators: dict[str, Callable[..., Any]] = {}
        self.activities: dict[str, Callable[..., Any]] = {}
        self.entities: dict[str, Any] = {}

    def add_orchestrator(self, fn: Callable[..., Any], name: str | None = None) -> str:
        return self._add(self.orchestrators, "orchestrator", fn, name)

    def add_activity(self, fn: Callable[..., Any], name: str | None = None) -> str:
        return self._add(self.activities, "activity", fn, name)

    def add_entity(self, fn: Any, name: str | None = None) -> str:
        return self._add(self.entities, "entity", fn, (name or function_name(fn)).lower())

    def get_orchestrator(self, name: str) -> Callable[..., Any] | None:
        return self.orchestrators.get(name)

    def get_activity(self, name: str) -> Callable[..., Any] | None:
        return self.activities.get(name)

    def get_entity(self, name: str) -> Any | None:
        return self.entities.get(name.lower())

    @staticmethod
    def _add(table: dict[str, Any], kind: str, fn: Any, name: str | None) -> str:
        if fn is None:
            raise RegistrationError(f"an {kind} function argument is required")
        resolved = name if name is not None else function_name(fn)
        if not resolved:
            raise RegistrationError(f"a non-empty {kind} name is required")
        if resolved in table:
            raise RegistrationError(f"an {kind} named '{resolved}' is already registered")
        table[resolved] = fn
        return resolved
