"""Orchestration and activity programming model: contexts, durable tasks, retry policies and task errors.

Compatible with the ``durabletask.task`` module of Microsoft's ``durabletask`` package.
"""

from __future__ import annotations

from typing import Any

from durabletask._errors import DurableTaskError, PayloadTooLargeError, SerializationError
from durabletask._replay.contexts import (
    Activity,
    ActivityContext,
    Entity,
    OrchestrationContext,
    Orchestrator,
    ReplaySafeLogger,
    T,
    TInput,
    TOutput,
    get_entity_name,
    get_name,
)
from durabletask._replay.failures import (
    EventTimeoutError,
    FailureDetails,
    NonDeterminismError,
    OrchestrationStateError,
    TaskCancelledError,
    TaskFailedError,
)
from durabletask._replay.retry import RetryPolicy
from durabletask._replay.tasks import (
    CancellableTask,
    CompletableTask,
    CompositeTask,
    RetryableTask,
    Task,
    TimerTask,
    WhenAllTask,
    WhenAnyTask,
    when_all,
    when_any,
)

__all__ = [
    "Activity",
    "ActivityContext",
    "CancellableTask",
    "CompletableTask",
    "CompositeTask",
    "DurableTaskError",
    "Entity",
    "EventTimeoutError",
    "FailureDetails",
    "NonDeterminismError",
    "OrchestrationContext",
    "OrchestrationStateError",
    "Orchestrator",
    "PayloadTooLargeError",
    "ReplaySafeLogger",
    "RetryPolicy",
    "RetryableTask",
    "SerializationError",
    "T",
    "TInput",
    "TOutput",
    "Task",
    "TaskCancelledError",
    "TaskFailedError",
    "TimerTask",
    "WhenAllTask",
    "WhenAnyTask",
    "get_entity_name",
    "get_name",
    "when_all",
    "when_any",
]

# The entity types were importable from this module in the compatible API; they live in
# ``durabletask.entities`` and are resolved on first use so this module does not import entity code.
_ENTITY_NAMES = frozenset({"DurableEntity", "EntityContext", "EntityInstanceId", "EntityLock"})


def __getattr__(name: str) -> Any:
    if name in _ENTITY_NAMES:
        import durabletask.entities as entities

        return getattr(entities, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
