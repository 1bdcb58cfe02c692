"""Client operations as sans-IO generators: each yields the calls it needs and returns the parsed result.

A shell drives an operation by sending each call's response back in (or throwing the mapped error into
it). The sync and async clients drive the same generators, so paging loops, wait-timeout translation
and parsing exist once.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from durabletask import _tracing as tracing
from durabletask import history
from durabletask._client import requests as rq
from durabletask._grpc.errors import DeadlineExceededError
from durabletask._instance_models import (
    CleanEntityStorageResult,
    DataConverter,
    EntityQuery,
    OrchestrationQuery,
    OrchestrationState,
    OrchestrationStatus,
    Page,
)
from durabletask._json_codec import MAX_PAYLOAD_BYTES
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.entities.entity_metadata import EntityMetadata

T = TypeVar("T")
Operation = Generator[rq.RpcRequest, Any, T]


def single(request: rq.RpcRequest, parse: Callable[[Any], T]) -> Operation[T]:
    """An operation of exactly one call."""
    response = yield request
    return parse(response)


def _discard(_: Any) -> None:
    return None


def fire(request: rq.RpcRequest) -> Operation[None]:
    """A one-call operation whose response carries nothing."""
    return single(request, _discard)


def schedule_new_orchestration(
    orchestrator: Any,
    *,
    input: Any,
    instance_id: str | None,
    start_at: datetime | None,
    reuse_id_policy: Any,
    tags: dict[str, str] | None,
    version: str | None,
    converter: DataConverter,
    emit_trace_spans: bool = True,
    payload_limit: int = MAX_PAYLOAD_BYTES,
) -> Operation[str]:
    request = rq.build_schedule_new_orchestration_request(
        orchestrator,
        input=input,
        instance_id=instance_id,
        start_at=start_at,
        reuse_id_policy=reuse_id_policy,
        tags=tags,
        version=version,
        converter=converter,
        payload_limit=payload_limit,
    )
    message: pb.CreateInstanceRequest = request.request  # type: ignore[assignment]
    attributes = {
        tracing.ATTR_TYPE: "orchestration",
        tracing.ATTR_NAME: message.name,
        tracing.ATTR_INSTANCE_ID: message.instanceId,
    }
    if version:
        attributes[tracing.ATTR_VERSION] = version
    name = tracing.span_name("create_orchestration", message.name, version)
    # The PRODUCER span covers the call; its context becomes the orchestration's parent.
    with tracing.producer_span(name, attributes, emit=emit_trace_spans) as parent:
        if parent is not None:
            message.parentTraceContext.CopyFrom(parent.to_proto())
        response = yield request
    return rq.parse_schedule_new_orchestration_response(response)


def raise_orchestration_event(
    instance_id: str,
    event_name: str,
    *,
    data: Any,
    converter: DataConverter,
    emit_trace_spans: bool = True,
    payload_limit: int = MAX_PAYLOAD_BYTES,
) -> Operation[None]:
    request = rq.build_raise_event_request(
        instance_id, event_name, data=data, converter=converter, payload_limit=payload_limit
    )
    attributes = {
        tracing.ATTR_TYPE: "event",
        tracing.ATTR_NAME: event_name,
        tracing.ATTR_TARGET_INSTANCE_ID: instance_id,
    }
    name = tracing.span_name("orchestration_event", event_name)
    with tracing.producer_span(name, attributes, emit=emit_trace_spans):
        yield request


def signal_entity(request: rq.RpcRequest) -> Operation[None]:
    """``SignalEntity``, carrying the caller's trace context (if any) to the entity operation."""
    if tracing.otel_available():
        parent = tracing.api().current_parent()
        if parent is not None:
            message: pb.SignalEntityRequest = request.request  # type: ignore[assignment]
            message.parentTraceContext.CopyFrom(parent.to_proto())
    yield request


def get_orchestration_state(
    instance_id: str, *, fetch_payloads: bool, converter: DataConverter
) -> Operation[OrchestrationState | None]:
    request = rq.build_get_orchestration_state_request(instance_id, fetch_payloads=fetch_payloads)
    response = yield request
    return rq.parse_get_orchestration_state_response(instance_id, response, converter)


def wait_for_orchestration(
    rpc: str, instance_id: str, *, fetch_payloads: bool, timeout: float | None, converter: DataConverter
) -> Operation[OrchestrationState | None]:
    """``WaitForInstanceStart``/``Completion``; an expired wait raises a ``TimeoutError`` naming the instance."""
    request = rq.build_wait_request(rpc, instance_id, fetch_payloads=fetch_payloads, timeout=timeout)
    try:
        response = yield request
    except DeadlineExceededError as exc:
        goal = "start" if rpc == "WaitForInstanceStart" else "complete"
        raise DeadlineExceededError(
            f"timed out after {request.timeout}s waiting for orchestration '{instance_id}' to {goal}", method=rpc
        ) from exc
    return rq.parse_get_orchestration_state_response(instance_id, response, converter)


def get_orchestration_history(
    instance_id: str, *, execution_id: str | None, for_work_item_processing: bool
) -> Operation[list[history.HistoryEvent]]:
    request = rq.build_get_orchestration_history_request(
        instance_id, execution_id=execution_id, for_work_item_processing=for_work_item_processing
    )
    return single(request, rq.parse_get_orchestration_history_response)


def list_instance_ids(
    runtime_status: Sequence[OrchestrationStatus] | None,
    completed_time_from: datetime | None,
    completed_time_to: datetime | None,
    page_size: int | None,
    continuation_token: str | None,
) -> Operation[Page[str]]:
    request = rq.build_list_instance_ids_request(
        runtime_status, completed_time_from, completed_time_to, page_size, continuation_token
    )
    return single(request, rq.parse_list_instance_ids_response)


def get_all_orchestration_states(
    query: OrchestrationQuery | None, *, converter: DataConverter
) -> Operation[list[OrchestrationState]]:
    """Every page of ``query``."""
    query = query if query is not None else OrchestrationQuery()
    states: list[OrchestrationState] = []
    token: str | None = None
    while True:
        response = yield rq.build_query_instances_request(query, token)
        page, token = rq.parse_query_instances_response(response, converter, token)
        states.extend(page)
        if token is None:
            return states


def restart_orchestration(instance_id: str, *, restart_with_new_instance_id: bool) -> Operation[str]:
    request = rq.build_restart_orchestration_request(
        instance_id, restart_with_new_instance_id=restart_with_new_instance_id
    )
    return single(request, rq.parse_restart_orchestration_response)


def get_entity(
    entity_instance_id: EntityInstanceId, include_state: bool, *, converter: DataConverter
) -> Operation[EntityMetadata | None]:
    response = yield rq.build_get_entity_request(entity_instance_id, include_state)
    return rq.parse_get_entity_response(response, include_state, converter)


def get_all_entities(query: EntityQuery | None, *, converter: DataConverter) -> Operation[list[EntityMetadata]]:
    """Every page of ``query``."""
    query = query if query is not None else EntityQuery()
    entities: list[EntityMetadata] = []
    token: str | None = None
    while True:
        response = yield rq.build_query_entities_request(query, token)
        page, token = rq.parse_query_entities_response(response, query.include_state, converter, token)
        entities.extend(page)
        if token is None:
            return entities


def clean_entity_storage(
    remove_empty_entities: bool, release_orphaned_locks: bool
) -> Operation[CleanEntityStorageResult]:
    """Every batch, with the counts summed."""
    total = CleanEntityStorageResult(0, 0)
    token: str | None = None
    while True:
        response = yield rq.build_clean_entity_storage_request(remove_empty_entities, release_orphaned_locks, token)
        batch, token = rq.parse_clean_entity_storage_response(response, token)
        total.empty_entities_removed += batch.empty_entities_removed
        total.orphaned_locks_released += batch.orphaned_locks_released
        if token is None:
            return total
