"""Sans-IO client requests: one ``build_<op>_request`` and ``parse_<op>_response`` per operation, no I/O."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from google.protobuf import duration_pb2, wrappers_pb2
from google.protobuf.message import Message

from durabletask import history
from durabletask._attach.fingerprint import Fingerprint
from durabletask._client import validation as check
from durabletask._grpc import convert
from durabletask._grpc.resiliency import LONG_POLL_RPCS
from durabletask._instance_models import (
    CleanEntityStorageResult,
    DataConverter,
    EntityQuery,
    OrchestrationQuery,
    OrchestrationState,
    OrchestrationStatus,
    Page,
    PurgeInstancesResult,
)
from durabletask._json_codec import MAX_PAYLOAD_BYTES
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.entities.entity_metadata import EntityMetadata

#: Calls the clients may safely repeat after a transient failure: they only read.
IDEMPOTENT_RPCS = frozenset(
    {
        "GetInstance",
        "WaitForInstanceStart",
        "WaitForInstanceCompletion",
        "QueryInstances",
        "ListInstanceIds",
        "StreamInstanceHistory",
        "GetEntity",
        "QueryEntities",
    }
)

#: Calls that block on the server until something happens, so their deadline is the caller's wait timeout.
WAITING_RPCS = LONG_POLL_RPCS


@dataclass(frozen=True, slots=True)
class RpcRequest:
    """One call to make: the ``TaskHubSidecarService`` method, its message, and how to make it."""

    method: str
    request: Message
    timeout: float | None = None
    streaming: bool = False
    #: The answer's payload tokens stay as they are (with a payload store): the caller reads only IDs.
    keep_payloads: bool = False
    #: Extra request metadata for this call; the answer then comes as ``call_plan.Answered``, with the
    #: answer's trailing metadata (a unary call only).
    metadata: tuple[tuple[str, str], ...] = ()

    @property
    def idempotent(self) -> bool:
        """Whether a transient failure may be retried."""
        return self.method in IDEMPOTENT_RPCS


def _ts(value: datetime | None) -> Any:
    return convert.to_timestamp(value) if value is not None else None


def next_token(token: Any, previous: str | None) -> str | None:
    """The continuation token to send next, or ``None`` when paging is over.

    Absent, empty and ``"0"`` tokens end paging, and so does a repeated token, which would loop forever.
    """
    value = token.value if token is not None else ""
    if not value or value == "0" or value == previous:
        return None
    return str(value)


# ----------------------------------------------------------------------------------------- orchestrations


def _reuse_policy(policy: Any) -> pb.OrchestrationIdReusePolicy | None:
    """The wire reuse policy from a policy message (any generated module) or an iterable of statuses."""
    if policy is None:
        return None
    replaceable = getattr(policy, "replaceableStatus", None)
    if replaceable is not None:
        return pb.OrchestrationIdReusePolicy(replaceableStatus=list(replaceable))
    if isinstance(policy, (OrchestrationStatus, str, Iterable)):
        return pb.OrchestrationIdReusePolicy(replaceableStatus=check.statuses(policy, "reuse_id_policy"))
    raise TypeError(
        "reuse_id_policy must be an OrchestrationIdReusePolicy or a list of OrchestrationStatus, "
        f"not {type(policy).__name__}"
    )


def build_schedule_new_orchestration_request(
    orchestrator: str | Callable[..., Any],
    *,
    input: Any = None,
    instance_id: str | None = None,
    start_at: datetime | None = None,
    reuse_id_policy: Any = None,
    tags: dict[str, str] | None = None,
    version: str | None = None,
    converter: DataConverter,
    payload_limit: int = MAX_PAYLOAD_BYTES,
) -> RpcRequest:
    """``StartInstance``; a missing instance ID becomes a random UUID (hex).

    The instance's tags also record its fingerprint (name, version, input hash and, when the orchestrator is
    given as a function, its code hash) so a later run can attach to it safely (see ``attach_orchestration``).
    """
    name = check.orchestrator_name(orchestrator)
    serialized_input = check.payload(converter, input, "input", payload_limit, instance_id)
    checked_version = check.name(version, "version") if version is not None else None
    fingerprint = Fingerprint.compute(
        name, checked_version, serialized_input, orchestrator if callable(orchestrator) else None
    )
    request = pb.CreateInstanceRequest(
        instanceId=check.instance_id(instance_id) if instance_id is not None else uuid.uuid4().hex,
        name=name,
        input=convert.string_value(serialized_input),
        scheduledStartTimestamp=_ts(check.optional_datetime(start_at, "start_at")),
        version=convert.string_value(checked_version),
        orchestrationIdReusePolicy=_reuse_policy(reuse_id_policy),
        # The caller's tags cannot collide with the fingerprint's keys (check.tags refuses them).
        tags={**(check.tags(tags) or {}), **fingerprint.to_tags()},
        requestTime=convert.to_timestamp(datetime.now(timezone.utc)),
    )
    return RpcRequest("StartInstance", request)


def parse_schedule_new_orchestration_response(response: pb.CreateInstanceResponse) -> str:
    """The new instance's ID."""
    return response.instanceId


def build_get_orchestration_state_request(instance_id: str, *, fetch_payloads: bool = True) -> RpcRequest:
    """``GetInstance``."""
    request = pb.GetInstanceRequest(instanceId=check.instance_id(instance_id), getInputsAndOutputs=fetch_payloads)
    return RpcRequest("GetInstance", request)


def parse_get_orchestration_state_response(
    instance_id: str, response: pb.GetInstanceResponse, converter: DataConverter
) -> OrchestrationState | None:
    """The state, or ``None`` if the instance does not exist; reports the ID that was asked for."""
    if not response.exists:
        return None
    state = convert.orchestration_state_from_pb(response.orchestrationState, converter)
    state.instance_id = instance_id
    return state


def build_wait_request(
    rpc: str, instance_id: str, *, fetch_payloads: bool, timeout: float | timedelta | None
) -> RpcRequest:
    """``WaitForInstanceStart`` / ``WaitForInstanceCompletion``; parse with the ``get_orchestration_state`` parser."""
    request = pb.GetInstanceRequest(instanceId=check.instance_id(instance_id), getInputsAndOutputs=fetch_payloads)
    return RpcRequest(rpc, request, timeout=check.wait_timeout(timeout))


def build_get_orchestration_history_request(
    instance_id: str, *, execution_id: str | None = None, for_work_item_processing: bool = False
) -> RpcRequest:
    """``StreamInstanceHistory`` (a server stream of history chunks)."""
    request = pb.StreamInstanceHistoryRequest(
        instanceId=check.instance_id(instance_id),
        executionId=convert.string_value(execution_id),
        forWorkItemProcessing=for_work_item_processing,
    )
    return RpcRequest("StreamInstanceHistory", request, streaming=True)


def parse_get_orchestration_history_response(chunks: Iterable[pb.HistoryChunk]) -> list[history.HistoryEvent]:
    """Every event of every chunk, in order."""
    return [convert.history_event_from_pb(event) for chunk in chunks for event in chunk.events]


def build_list_instance_ids_request(
    runtime_status: Sequence[OrchestrationStatus] | None = None,
    completed_time_from: datetime | None = None,
    completed_time_to: datetime | None = None,
    page_size: int | None = None,
    continuation_token: str | None = None,
) -> RpcRequest:
    """``ListInstanceIds`` for one page."""
    request = pb.ListInstanceIdsRequest(
        runtimeStatus=check.statuses(runtime_status),
        completedTimeFrom=_ts(check.optional_datetime(completed_time_from, "completed_time_from")),
        completedTimeTo=_ts(check.optional_datetime(completed_time_to, "completed_time_to")),
        pageSize=check.page_size(page_size) or 0,
        lastInstanceKey=convert.string_value(continuation_token),
    )
    return RpcRequest("ListInstanceIds", request)


def parse_list_instance_ids_response(response: pb.ListInstanceIdsResponse) -> Page[str]:
    """One page of IDs and the key to continue from."""
    token = response.lastInstanceKey.value if response.HasField("lastInstanceKey") else None
    return Page(items=list(response.instanceIds), continuation_token=token or None)


def build_query_instances_request(query: OrchestrationQuery, continuation_token: str | None = None) -> RpcRequest:
    """``QueryInstances`` for one page of ``query``."""
    request = pb.QueryInstancesRequest(
        query=pb.InstanceQuery(
            runtimeStatus=check.statuses(query.runtime_status),
            createdTimeFrom=_ts(check.optional_datetime(query.created_time_from, "created_time_from")),
            createdTimeTo=_ts(check.optional_datetime(query.created_time_to, "created_time_to")),
            instanceIdPrefix=convert.string_value(query.instance_id_prefix),
            maxInstanceCount=check.page_size(query.max_instance_count, "max_instance_count") or 0,
            fetchInputsAndOutputs=query.fetch_inputs_and_outputs,
            continuationToken=convert.string_value(continuation_token),
        )
    )
    return RpcRequest("QueryInstances", request)


def parse_query_instances_response(
    response: pb.QueryInstancesResponse, converter: DataConverter, previous_token: str | None
) -> tuple[list[OrchestrationState], str | None]:
    """One page of states and the token for the next page (``None`` when done)."""
    states = [convert.orchestration_state_from_pb(s, converter) for s in response.orchestrationState]
    token = response.continuationToken if response.HasField("continuationToken") else None
    return states, next_token(token, previous_token)


def build_raise_event_request(
    instance_id: str,
    event_name: str,
    *,
    data: Any = None,
    converter: DataConverter,
    payload_limit: int = MAX_PAYLOAD_BYTES,
) -> RpcRequest:
    """``RaiseEvent``."""
    request = pb.RaiseEventRequest(
        instanceId=check.instance_id(instance_id),
        name=check.name(event_name, "event_name"),
        input=convert.string_value(check.payload(converter, data, "data", payload_limit, instance_id)),
    )
    return RpcRequest("RaiseEvent", request)


def build_terminate_orchestration_request(
    instance_id: str,
    *,
    output: Any = None,
    recursive: bool = True,
    converter: DataConverter,
    payload_limit: int = MAX_PAYLOAD_BYTES,
) -> RpcRequest:
    """``TerminateInstance``."""
    request = pb.TerminateRequest(
        instanceId=check.instance_id(instance_id),
        output=convert.string_value(check.payload(converter, output, "output", payload_limit, instance_id)),
        recursive=recursive,
    )
    return RpcRequest("TerminateInstance", request)


def build_suspend_orchestration_request(instance_id: str, *, reason: str | None = None) -> RpcRequest:
    """``SuspendInstance``."""
    request = pb.SuspendRequest(instanceId=check.instance_id(instance_id), reason=convert.string_value(reason))
    return RpcRequest("SuspendInstance", request)


def build_resume_orchestration_request(instance_id: str, *, reason: str | None = None) -> RpcRequest:
    """``ResumeInstance``."""
    request = pb.ResumeRequest(instanceId=check.instance_id(instance_id), reason=convert.string_value(reason))
    return RpcRequest("ResumeInstance", request)


def build_rewind_orchestration_request(instance_id: str, *, reason: str | None = None) -> RpcRequest:
    """``RewindInstance``."""
    request = pb.RewindInstanceRequest(instanceId=check.instance_id(instance_id), reason=convert.string_value(reason))
    return RpcRequest("RewindInstance", request)


def build_restart_orchestration_request(instance_id: str, *, restart_with_new_instance_id: bool = False) -> RpcRequest:
    """``RestartInstance``."""
    request = pb.RestartInstanceRequest(
        instanceId=check.instance_id(instance_id), restartWithNewInstanceId=restart_with_new_instance_id
    )
    return RpcRequest("RestartInstance", request)


def parse_restart_orchestration_response(response: pb.RestartInstanceResponse) -> str:
    """The restarted instance's ID (a new one if requested)."""
    return response.instanceId


def build_purge_orchestration_request(instance_id: str, recursive: bool = True) -> RpcRequest:
    """``PurgeInstances`` for one instance."""
    request = pb.PurgeInstancesRequest(
        instanceId=check.instance_id(instance_id), recursive=recursive, isOrchestration=True
    )
    return RpcRequest("PurgeInstances", request)


def build_purge_orchestrations_by_request(
    created_time_from: datetime | None = None,
    created_time_to: datetime | None = None,
    runtime_status: Sequence[OrchestrationStatus] | None = None,
    recursive: bool = False,
    timeout: timedelta | None = None,
) -> RpcRequest:
    """``PurgeInstances`` by filter; ``timeout`` bounds the server-side work, not the call."""
    purge_filter = pb.PurgeInstanceFilter(
        createdTimeFrom=_ts(check.optional_datetime(created_time_from, "created_time_from")),
        createdTimeTo=_ts(check.optional_datetime(created_time_to, "created_time_to")),
        runtimeStatus=check.statuses(runtime_status),
    )
    if timeout is not None:
        if not isinstance(timeout, timedelta):
            raise TypeError(f"timeout must be a timedelta, not {type(timeout).__name__}")
        if timeout <= timedelta():
            raise ValueError(f"timeout must be greater than zero, got {timeout}")
        duration = duration_pb2.Duration()
        duration.FromTimedelta(timeout)
        purge_filter.timeout.CopyFrom(duration)
    return RpcRequest("PurgeInstances", pb.PurgeInstancesRequest(purgeInstanceFilter=purge_filter, recursive=recursive))


def parse_purge_response(response: pb.PurgeInstancesResponse) -> PurgeInstancesResult:
    """The purge count and, if reported, whether the purge finished."""
    is_complete = response.isComplete.value if response.HasField("isComplete") else None
    return PurgeInstancesResult(response.deletedInstanceCount, is_complete)


# ----------------------------------------------------------------------------------------------- entities


def _entity_id(value: EntityInstanceId | str) -> str:
    if isinstance(value, str):
        value = EntityInstanceId.parse(value)
    if not isinstance(value, EntityInstanceId):
        raise TypeError(f"entity_instance_id must be an EntityInstanceId, not {type(value).__name__}")
    return str(value)


def build_signal_entity_request(
    entity_instance_id: EntityInstanceId,
    operation_name: str,
    input: Any = None,
    signal_time: datetime | None = None,
    *,
    converter: DataConverter,
    payload_limit: int = MAX_PAYLOAD_BYTES,
) -> RpcRequest:
    """``SignalEntity``; ``signal_time`` delays delivery."""
    request = pb.SignalEntityRequest(
        instanceId=_entity_id(entity_instance_id),
        name=check.name(operation_name, "operation_name"),
        input=convert.string_value(
            check.payload(converter, input, "input", payload_limit, _entity_id(entity_instance_id))
        ),
        requestId=str(uuid.uuid4()),
        scheduledTime=_ts(check.optional_datetime(signal_time, "signal_time")),
        requestTime=convert.to_timestamp(datetime.now(timezone.utc)),
    )
    return RpcRequest("SignalEntity", request)


def build_get_entity_request(entity_instance_id: EntityInstanceId, include_state: bool = True) -> RpcRequest:
    """``GetEntity``."""
    request = pb.GetEntityRequest(instanceId=_entity_id(entity_instance_id), includeState=include_state)
    return RpcRequest("GetEntity", request)


def parse_get_entity_response(
    response: pb.GetEntityResponse, include_state: bool, converter: DataConverter
) -> EntityMetadata | None:
    """The entity's metadata, or ``None`` if it does not exist."""
    if not response.exists:
        return None
    return EntityMetadata.from_entity_metadata(response.entity, include_state, converter)


def build_query_entities_request(query: EntityQuery, continuation_token: str | None = None) -> RpcRequest:
    """``QueryEntities`` for one page of ``query``."""
    size = check.page_size(query.page_size)
    request = pb.QueryEntitiesRequest(
        query=pb.EntityQuery(
            instanceIdStartsWith=convert.string_value(query.instance_id_starts_with),
            lastModifiedFrom=_ts(check.optional_datetime(query.last_modified_from, "last_modified_from")),
            lastModifiedTo=_ts(check.optional_datetime(query.last_modified_to, "last_modified_to")),
            includeState=query.include_state,
            includeTransient=query.include_transient,
            pageSize=None if size is None else wrappers_pb2.Int32Value(value=size),
            continuationToken=convert.string_value(continuation_token),
        )
    )
    return RpcRequest("QueryEntities", request)


def parse_query_entities_response(
    response: pb.QueryEntitiesResponse, include_state: bool, converter: DataConverter, previous_token: str | None
) -> tuple[list[EntityMetadata], str | None]:
    """One page of entities and the token for the next page (``None`` when done)."""
    entities = [EntityMetadata.from_entity_metadata(e, include_state, converter) for e in response.entities]
    token = response.continuationToken if response.HasField("continuationToken") else None
    return entities, next_token(token, previous_token)


def build_clean_entity_storage_request(
    remove_empty_entities: bool = True, release_orphaned_locks: bool = True, continuation_token: str | None = None
) -> RpcRequest:
    """``CleanEntityStorage`` for one batch."""
    request = pb.CleanEntityStorageRequest(
        removeEmptyEntities=remove_empty_entities,
        releaseOrphanedLocks=release_orphaned_locks,
        continuationToken=convert.string_value(continuation_token),
    )
    return RpcRequest("CleanEntityStorage", request)


def parse_clean_entity_storage_response(
    response: pb.CleanEntityStorageResponse, previous_token: str | None
) -> tuple[CleanEntityStorageResult, str | None]:
    """This batch's counts and the token for the next batch (``None`` when done)."""
    token = response.continuationToken if response.HasField("continuationToken") else None
    result = CleanEntityStorageResult(response.emptyEntitiesRemoved, response.orphanedLocksReleased)
    return result, next_token(token, previous_token)
