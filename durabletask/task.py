"""Orchestration and activity programming model: contexts, durable tasks, retry policies and task errors.

Compatible with the ``durabletask.task`` module of Microsoft's ``durabletask`` package.
"""

from __future__ import annotations

from durabletask._errors import DurableTaskError as DurableTaskError
from durabletask._errors import PayloadTooLargeError as PayloadTooLargeError
from durabletask._errors import SerializationError as SerializationError
from durabletask._replay.activity_control import ActivityCancellation as ActivityCancellation
from durabletask._replay.contexts import (
    Activity,
    ActivityContext,
    Entity,
    OrchestrationContext,
    Orchestrator,
    T,
    TInput,
    TOutput,
)
from durabletask._replay.failures import ActivityCancelledError as ActivityCancelledError
from durabletask._replay.failures import ActivityTimeoutError as ActivityTimeoutError
from durabletask._replay.failures import EventTimeoutError as EventTimeoutError
from durabletask._replay.failures import (
    FailureDetails,
    NonDeterminismError,
    OrchestrationStateError,
    TaskCancelledError,
    TaskFailedError,
)
from durabletask._replay.names import get_entity_name, get_name
from durabletask._replay.replay_logger import ReplaySafeLogger
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
from durabletask._replay.tasks import LockTask as LockTask

# The compatible API also exported the entity types from this module; their home is ``durabletask.entities``.
from durabletask.entities import DurableEntity as DurableEntity
from durabletask.entities import EntityContext as EntityContext
from durabletask.entities import EntityInstanceId as EntityInstanceId
from durabletask.entities import EntityLock as EntityLock

# What ``from durabletask.task import *`` gives in Microsoft's module (which has no ``__all__``); the errors
# and task classes of ours imported above as themselves are importable from here all the same.
__all__ = [
    "Activity",
    "ActivityContext",
    "CancellableTask",
    "CompletableTask",
    "CompositeTask",
    "DurableEntity",
    "Entity",
    "EntityContext",
    "EntityInstanceId",
    "EntityLock",
    "FailureDetails",
    "NonDeterminismError",
    "OrchestrationContext",
    "OrchestrationStateError",
    "Orchestrator",
    "ReplaySafeLogger",
    "RetryPolicy",
    "RetryableTask",
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
