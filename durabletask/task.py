"""Orchestration and activity programming model: contexts, durable tasks, retry policies and task errors.

Compatible with the ``durabletask.task`` module of Microsoft's ``durabletask`` package.
"""

from __future__ import annotations

from durabletask._replay.contexts import (
    Activity,
    ActivityContext,
    Entity,
    OrchestrationContext,
    Orchestrator,
    ReplaySafeLogger,
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
    "Entity",
    "EventTimeoutError",
    "FailureDetails",
    "NonDeterminismError",
    "OrchestrationContext",
    "OrchestrationStateError",
    "Orchestrator",
    "ReplaySafeLogger",
    "RetryPolicy",
    "RetryableTask",
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
