"""Orchestration and activity programming model: contexts, durable tasks, retry policies and task errors.

Compatible with the ``durabletask.task`` module of Microsoft's ``durabletask`` package.
"""

from __future__ import annotations

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
    LockTask,
    RetryableTask,
    Task,
    TimerTask,
    WhenAllTask,
    WhenAnyTask,
    when_all,
    when_any,
)

# The compatible API also exported the entity types from this module; their home is ``durabletask.entities``.
from durabletask.entities import DurableEntity as DurableEntity
from durabletask.entities import EntityContext as EntityContext
from durabletask.entities import EntityInstanceId as EntityInstanceId
from durabletask.entities import EntityLock as EntityLock

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
    "LockTask",
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
