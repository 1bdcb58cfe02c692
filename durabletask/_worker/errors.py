"""The worker's public "not registered" errors, importable without pulling in the worker itself."""

from __future__ import annotations

from durabletask._errors import DurableTaskError

# The public home of these names is ``durabletask.worker``; reporting that module keeps the
# error types recorded in failure details identical to the ones other SDKs and tools expect.
_PUBLIC_MODULE = "durabletask.worker"


class OrchestratorNotRegisteredError(DurableTaskError, ValueError):
    """A work item named an orchestrator this worker has no function for."""


class ActivityNotRegisteredError(DurableTaskError, ValueError):
    """A work item named an activity this worker has no function for."""


class EntityNotRegisteredError(DurableTaskError, ValueError):
    """A work item named an entity this worker has no function or class for."""


for _cls in (OrchestratorNotRegisteredError, ActivityNotRegisteredError, EntityNotRegisteredError):
    _cls.__module__ = _PUBLIC_MODULE
