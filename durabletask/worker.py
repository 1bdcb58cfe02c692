"""Durable Task worker: run orchestrators, activities and entities for a task hub over gRPC.

Register functions on a :class:`TaskHubGrpcWorker`, then start it; it streams work items from the
backend and completes each one with the result of the registered code.
"""

from __future__ import annotations

from durabletask import task
from durabletask._registry import (
    ActivityNotRegisteredError,
    EntityNotRegisteredError,
    OrchestratorNotRegisteredError,
)
from durabletask._worker.code_check import CodeMismatchPolicy
from durabletask._worker.filters import (
    ActivityWorkItemFilter,
    EntityWorkItemFilter,
    OrchestrationWorkItemFilter,
    WorkItemFilters,
)
from durabletask._worker.grpc_worker import DEFAULT_MAXIMUM_TIMER_INTERVAL, TaskHubGrpcWorker
from durabletask._worker.options import (
    ConcurrencyOptions,
    VersionFailureStrategy,
    VersioningOptions,
    VersionMatchStrategy,
)
from durabletask._worker.session_cache import ExtendedSessionOptions
from durabletask.entities import (
    DurableEntity,
    EntityContext,
    EntityInstanceId,
    EntityLock,
    EntityOperationFailedException,
)
from durabletask.exception_properties import ExceptionPropertiesProvider
from durabletask.grpc_options import GrpcChannelOptions, GrpcWorkerResiliencyOptions
from durabletask.payload import helpers as payload_helpers  # noqa: F401 - a module attribute, as in Microsoft's
from durabletask.payload.store import PayloadStore
from durabletask.serialization import DataConverter, JsonDataConverter

#: The timestamp format Microsoft's worker module exports (ISO 8601 with microseconds, UTC).
DATETIME_STRING_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

__all__ = [
    "DATETIME_STRING_FORMAT",
    "DEFAULT_MAXIMUM_TIMER_INTERVAL",
    "ActivityNotRegisteredError",
    "ActivityWorkItemFilter",
    "CodeMismatchPolicy",
    "ConcurrencyOptions",
    "DataConverter",
    "DurableEntity",
    "EntityContext",
    "EntityInstanceId",
    "EntityLock",
    "EntityNotRegisteredError",
    "EntityOperationFailedException",
    "EntityWorkItemFilter",
    "ExceptionPropertiesProvider",
    "ExtendedSessionOptions",
    "GrpcChannelOptions",
    "GrpcWorkerResiliencyOptions",
    "JsonDataConverter",
    "OrchestrationWorkItemFilter",
    "OrchestratorNotRegisteredError",
    "PayloadStore",
    "TaskHubGrpcWorker",
    "VersionFailureStrategy",
    "VersionMatchStrategy",
    "VersioningOptions",
    "WorkItemFilters",
    "task",
]
