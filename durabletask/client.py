"""Clients for scheduling and managing orchestrations and entities, and the types they return.

Compatible with the ``durabletask.client`` module of Microsoft's ``durabletask`` package.
"""

from __future__ import annotations

from durabletask import history as history  # reachable from here, as from Microsoft's module
from durabletask import task as task
from durabletask._attach.decision import AttachAction, AttachedInstanceFailedError, FingerprintMismatchError
from durabletask._client.async_client import AsyncTaskHubGrpcClient
from durabletask._client.attach import AsyncAttachedOrchestration, AttachedOrchestration
from durabletask._client.requests import parse_get_orchestration_state_response, parse_purge_response
from durabletask._client.sync_client import TaskHubGrpcClient
from durabletask._errors import SyncCallInEventLoopError
from durabletask._grpc.convert import orchestration_state_from_pb
from durabletask._grpc.errors import (
    AlreadyExistsError,
    DeadlineExceededError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    RpcStatusError,
    UnavailableError,
)
from durabletask._grpc.resiliency import AsyncClientResiliencyInterceptor, ClientResiliencyInterceptor, FailureTracker
from durabletask._instance_models import (
    CleanEntityStorageResult,
    EntityQuery,
    OrchestrationFailedError,
    OrchestrationQuery,
    OrchestrationState,
    OrchestrationStatus,
    Page,
    PurgeInstancesResult,
)
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.entities.entity_metadata import EntityMetadata
from durabletask.grpc_options import GrpcChannelOptions, GrpcClientResiliencyOptions
from durabletask.payload import helpers as payload_helpers  # noqa: F401 - a module attribute, as in Microsoft's
from durabletask.payload.store import PayloadStore
from durabletask.serialization import DEFAULT_DATA_CONVERTER, DataConverter, JsonDataConverter

__all__ = [
    "DEFAULT_DATA_CONVERTER",
    "AlreadyExistsError",
    "AsyncAttachedOrchestration",
    "AsyncClientResiliencyInterceptor",
    "AsyncTaskHubGrpcClient",
    "AttachAction",
    "AttachedInstanceFailedError",
    "AttachedOrchestration",
    "CleanEntityStorageResult",
    "ClientResiliencyInterceptor",
    "DataConverter",
    "DeadlineExceededError",
    "EntityInstanceId",
    "EntityMetadata",
    "EntityQuery",
    "FailedPreconditionError",
    "FailureTracker",
    "FingerprintMismatchError",
    "GrpcChannelOptions",
    "GrpcClientResiliencyOptions",
    "InvalidArgumentError",
    "JsonDataConverter",
    "NotFoundError",
    "OrchestrationFailedError",
    "OrchestrationQuery",
    "OrchestrationState",
    "OrchestrationStatus",
    "Page",
    "PayloadStore",
    "PurgeInstancesResult",
    "RpcStatusError",
    "SyncCallInEventLoopError",
    "TaskHubGrpcClient",
    "UnavailableError",
    "new_orchestration_state",
    "new_purge_instances_result",
    "parse_orchestration_state",
]


def new_orchestration_state(
    instance_id: str, res: pb.GetInstanceResponse, data_converter: DataConverter | None = None
) -> OrchestrationState | None:
    """The state in a ``GetInstance`` response (``None`` if the instance does not exist).

    Args:
        instance_id: The instance the request asked for.
        res: The ``GetInstance`` response.
        data_converter: Decodes the payloads later read from the state; the default JSON converter when ``None``.
    """
    return parse_get_orchestration_state_response(instance_id, res, data_converter or DEFAULT_DATA_CONVERTER)


def parse_orchestration_state(
    state: pb.OrchestrationState, data_converter: DataConverter | None = None
) -> OrchestrationState:
    """The public snapshot of a wire ``OrchestrationState``.

    Args:
        state: The wire message.
        data_converter: Decodes the payloads later read from the snapshot; the default JSON converter when ``None``.
    """
    return orchestration_state_from_pb(state, data_converter)


def new_purge_instances_result(response: pb.PurgeInstancesResponse) -> PurgeInstancesResult:
    """The result of a ``PurgeInstances`` response.

    Args:
        response: The ``PurgeInstances`` response.
    """
    return parse_purge_response(response)
