"""Durable Task worker: run orchestrators, activities and entities for a task hub over gRPC.

Register functions on a :class:`TaskHubGrpcWorker`, then start it; it streams work items from the
backend and completes each one with the result of the registered code.
"""

from __future__ import annotations

from durabletask import task as task
from durabletask._grpc.channel import DefaultClientInterceptorImpl as DefaultClientInterceptorImpl
from durabletask._grpc.resiliency import FailureTracker as FailureTracker
from durabletask._registry import ActivityNotRegisteredError as ActivityNotRegisteredError
from durabletask._registry import EntityNotRegisteredError as EntityNotRegisteredError
from durabletask._registry import OrchestratorNotRegisteredError as OrchestratorNotRegisteredError
from durabletask._replay.critical_section import OrchestrationEntityContext as OrchestrationEntityContext
from durabletask._replay.executor import ExecutionResults as ExecutionResults
from durabletask._worker.code_check import CodeMismatchPolicy as CodeMismatchPolicy
from durabletask._worker.filters import ActivityWorkItemFilter as ActivityWorkItemFilter
from durabletask._worker.filters import EntityWorkItemFilter as EntityWorkItemFilter
from durabletask._worker.filters import OrchestrationWorkItemFilter as OrchestrationWorkItemFilter
from durabletask._worker.filters import WorkItemFilters as WorkItemFilters
from durabletask._worker.grpc_worker import DEFAULT_MAXIMUM_TIMER_INTERVAL as DEFAULT_MAXIMUM_TIMER_INTERVAL
from durabletask._worker.grpc_worker import TaskHubGrpcWorker as TaskHubGrpcWorker
from durabletask._worker.options import ConcurrencyOptions as ConcurrencyOptions
from durabletask._worker.options import VersionFailureStrategy as VersionFailureStrategy
from durabletask._worker.options import VersioningOptions as VersioningOptions
from durabletask._worker.options import VersionMatchStrategy as VersionMatchStrategy
from durabletask._worker.session_cache import ExtendedSessionOptions as ExtendedSessionOptions
from durabletask.entities import DurableEntity as DurableEntity
from durabletask.entities import EntityContext as EntityContext
from durabletask.entities import EntityInstanceId as EntityInstanceId
from durabletask.entities import EntityLock as EntityLock
from durabletask.entities import EntityOperationFailedException as EntityOperationFailedException
from durabletask.entities.entity_context import StateShim as StateShim
from durabletask.exception_properties import ExceptionPropertiesProvider as ExceptionPropertiesProvider
from durabletask.grpc_options import GrpcChannelOptions as GrpcChannelOptions
from durabletask.grpc_options import GrpcWorkerResiliencyOptions as GrpcWorkerResiliencyOptions
from durabletask.internal.json_encode_output_exception import JsonEncodeOutputException as JsonEncodeOutputException
from durabletask.payload import helpers as payload_helpers  # noqa: F401 - a module attribute, as in Microsoft's
from durabletask.payload.store import PayloadStore as PayloadStore
from durabletask.serialization import DataConverter as DataConverter
from durabletask.serialization import JsonDataConverter as JsonDataConverter

#: The timestamp format Microsoft's worker module exports (ISO 8601 with microseconds, UTC).
DATETIME_STRING_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

# Microsoft's module lists only these two; every name imported above (as itself, so type checkers see it
# exported) is importable from here all the same.
__all__ = ["ConcurrencyOptions", "TaskHubGrpcWorker"]
