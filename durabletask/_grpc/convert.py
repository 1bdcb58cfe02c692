"""Proto ⇄ model conversions: timestamps, wrapper values, failure details, instance states and history events."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from google.protobuf import json_format, timestamp_pb2, wrappers_pb2
from google.protobuf.message import Message

from durabletask import history as h
from durabletask._attach.fingerprint import split_tags
from durabletask._errors import HistoryEventError, ProtocolError
from durabletask._instance_models import DEFAULT_CONVERTER, DataConverter, OrchestrationState, OrchestrationStatus
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.failures import FailureDetails, details_from_proto

# ---------------------------------------------------------------------------------------------- scalars


def to_timestamp(value: datetime) -> timestamp_pb2.Timestamp:
    """A protobuf timestamp; naive datetimes are taken to be UTC."""
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc))
    return ts


def from_timestamp(ts: timestamp_pb2.Timestamp) -> datetime:
    """A timezone-aware UTC datetime."""
    return ts.ToDatetime(tzinfo=timezone.utc)


def naive_utc(ts: timestamp_pb2.Timestamp) -> datetime:
    """A naive datetime in UTC, as the compatible API returns for instance states."""
    return ts.ToDatetime()


def optional_timestamp(msg: Message, field: str) -> datetime | None:
    """The timestamp in ``msg.field``, or ``None`` when the field is unset."""
    return from_timestamp(getattr(msg, field)) if msg.HasField(field) else None


def string_value(value: str | None) -> wrappers_pb2.StringValue | None:
    """Wrap an optional string (``None`` stays unset on the wire)."""
    return None if value is None else wrappers_pb2.StringValue(value=value)


def optional_string(msg: Message, field: str) -> str | None:
    """The wrapped string in ``msg.field``, or ``None`` when unset."""
    return str(getattr(msg, field).value) if msg.HasField(field) else None


def payload_string(msg: Message, field: str) -> str | None:
    """Like :func:`optional_string`, but an empty payload also reads as absent (no JSON value is empty)."""
    return optional_string(msg, field) or None


def failure_details_from_pb(details: pb.TaskFailureDetails) -> FailureDetails:
    """The public failure model for wire failure details (inner failures included)."""
    return details_from_proto(details)


def optional_failure(msg: Message, field: str) -> FailureDetails | None:
    """The failure details in ``msg.field``, or ``None`` when unset."""
    return details_from_proto(getattr(msg, field)) if msg.HasField(field) else None


# ---------------------------------------------------------------------------------------------- states


def orchestration_state_from_pb(
    state: pb.OrchestrationState, data_converter: DataConverter | None = None
) -> OrchestrationState:
    """The public snapshot of an instance."""
    failed = state.HasField("failureDetails") and (
        state.failureDetails.errorMessage != "" or state.failureDetails.errorType != ""
    )
    try:
        status = OrchestrationStatus(state.orchestrationStatus)
    except ValueError as exc:
        raise ProtocolError(f"unknown orchestration status {state.orchestrationStatus}") from exc
    return OrchestrationState(
        state.instanceId,
        state.name,
        status,
        # The compatible API reports instance times as naive UTC datetimes (history events are aware).
        naive_utc(state.createdTimestamp),
        naive_utc(state.lastUpdatedTimestamp),
        payload_string(state, "input"),
        payload_string(state, "output"),
        payload_string(state, "customStatus"),
        failure_details_from_pb(state.failureDetails) if failed else None,
        data_converter if data_converter is not None else DEFAULT_CONVERTER,
        version=optional_string(state, "version"),
        execution_id=optional_string(state, "executionId"),
        scheduled_start_at=naive_utc(state.scheduledStartTimestamp)
        if state.HasField("scheduledStartTimestamp")
        else None,
        completed_at=naive_utc(state.completedTimestamp) if state.HasField("completedTimestamp") else None,
        parent_instance_id=optional_string(state, "parentInstanceId"),
        tags=dict(state.tags) or None,
    )


# ---------------------------------------------------------------------------------------------- history


def _instance(msg: Message, field: str) -> h.OrchestrationInstance | None:
    if not msg.HasField(field):
        return None
    value = getattr(msg, field)
    return h.OrchestrationInstance(value.instanceId, optional_string(value, "executionId"))


def _parent(msg: Message, field: str) -> h.ParentInstanceInfo | None:
    if not msg.HasField(field):
        return None
    value = getattr(msg, field)
    return h.ParentInstanceInfo(
        task_scheduled_id=value.taskScheduledId,
        name=optional_string(value, "name"),
        version=optional_string(value, "version"),
        orchestration_instance=_instance(value, "orchestrationInstance"),
    )


def _trace(msg: Message, field: str) -> h.TraceContext | None:
    if not msg.HasField(field):
        return None
    value = getattr(msg, field)
    return h.TraceContext(value.traceParent, value.spanID, optional_string(value, "traceState"))


def _tags(msg: Any) -> dict[str, str] | None:
    return dict(msg.tags) or None


def _instance_tags(msg: Any) -> dict[str, str] | None:
    # An instance's stored tags also carry the attach fingerprint, which callers never see as tags.
    return split_tags(msg.tags)[0]


def _execution_started(e: pb.ExecutionStartedEvent, base: dict[str, Any]) -> h.HistoryEvent:
    return h.ExecutionStartedEvent(
        **base,
        name=e.name,
        version=optional_string(e, "version"),
        input=optional_string(e, "input"),
        orchestration_instance=_instance(e, "orchestrationInstance"),
        parent_instance=_parent(e, "parentInstance"),
        scheduled_start_timestamp=optional_timestamp(e, "scheduledStartTimestamp"),
        parent_trace_context=_trace(e, "parentTraceContext"),
        orchestration_span_id=optional_string(e, "orchestrationSpanID"),
        tags=_instance_tags(e),
    )


def _execution_rewound(e: pb.ExecutionRewoundEvent, base: dict[str, Any]) -> h.HistoryEvent:
    return h.ExecutionRewoundEvent(
        **base,
        reason=optional_string(e, "reason"),
        parent_execution_id=optional_string(e, "parentExecutionId"),
        instance_id=optional_string(e, "instanceId"),
        parent_trace_context=_trace(e, "parentTraceContext"),
        name=optional_string(e, "name"),
        version=optional_string(e, "version"),
        input=optional_string(e, "input"),
        parent_instance=_parent(e, "parentInstance"),
        tags=_instance_tags(e),
    )


def _entity_called(e: pb.EntityOperationCalledEvent, base: dict[str, Any]) -> h.HistoryEvent:
    return h.EntityOperationCalledEvent(
        **base,
        request_id=e.requestId,
        operation=e.operation,
        scheduled_time=optional_timestamp(e, "scheduledTime"),
        input=optional_string(e, "input"),
        parent_instance_id=optional_string(e, "parentInstanceId"),
        parent_execution_id=optional_string(e, "parentExecutionId"),
        target_instance_id=optional_string(e, "targetInstanceId"),
    )


_S = optional_string
_Converter = Callable[[Any, dict[str, Any]], h.HistoryEvent]

# One small converter per event kind, keyed by the ``eventType`` oneof name.
_HISTORY: dict[str, _Converter] = {
    "executionStarted": _execution_started,
    "executionCompleted": lambda e, b: h.ExecutionCompletedEvent(
        **b,
        orchestration_status=e.orchestrationStatus,
        result=_S(e, "result"),
        failure_details=optional_failure(e, "failureDetails"),
    ),
    "executionTerminated": lambda e, b: h.ExecutionTerminatedEvent(**b, input=_S(e, "input"), recurse=e.recurse),
    "taskScheduled": lambda e, b: h.TaskScheduledEvent(
        **b,
        name=e.name,
        version=_S(e, "version"),
        input=_S(e, "input"),
        parent_trace_context=_trace(e, "parentTraceContext"),
        tags=_tags(e),
    ),
    "taskCompleted": lambda e, b: h.TaskCompletedEvent(
        **b, task_scheduled_id=e.taskScheduledId, result=_S(e, "result")
    ),
    "taskFailed": lambda e, b: h.TaskFailedEvent(
        **b, task_scheduled_id=e.taskScheduledId, failure_details=optional_failure(e, "failureDetails")
    ),
    "subOrchestrationInstanceCreated": lambda e, b: h.SubOrchestrationInstanceCreatedEvent(
        **b,
        instance_id=e.instanceId,
        name=e.name,
        version=_S(e, "version"),
        input=_S(e, "input"),
        parent_trace_context=_trace(e, "parentTraceContext"),
        tags=_tags(e),
    ),
    "subOrchestrationInstanceCompleted": lambda e, b: h.SubOrchestrationInstanceCompletedEvent(
        **b, task_scheduled_id=e.taskScheduledId, result=_S(e, "result")
    ),
    "subOrchestrationInstanceFailed": lambda e, b: h.SubOrchestrationInstanceFailedEvent(
        **b, task_scheduled_id=e.taskScheduledId, failure_details=optional_failure(e, "failureDetails")
    ),
    "timerCreated": lambda e, b: h.TimerCreatedEvent(**b, fire_at=from_timestamp(e.fireAt)),
    "timerFired": lambda e, b: h.TimerFiredEvent(**b, fire_at=from_timestamp(e.fireAt), timer_id=e.timerId),
    "orchestratorStarted": lambda e, b: h.OrchestratorStartedEvent(**b),
    "orchestratorCompleted": lambda e, b: h.OrchestratorCompletedEvent(**b),
    "eventSent": lambda e, b: h.EventSentEvent(**b, instance_id=e.instanceId, name=e.name, input=_S(e, "input")),
    "eventRaised": lambda e, b: h.EventRaisedEvent(**b, name=e.name, input=_S(e, "input")),
    "genericEvent": lambda e, b: h.GenericEvent(**b, data=_S(e, "data")),
    "historyState": lambda e, b: h.HistoryStateEvent(
        **b,
        orchestration_state=json_format.MessageToDict(e.orchestrationState, preserving_proto_field_name=True),
    ),
    "continueAsNew": lambda e, b: h.ContinueAsNewEvent(**b, input=_S(e, "input")),
    "executionSuspended": lambda e, b: h.ExecutionSuspendedEvent(**b, input=_S(e, "input")),
    "executionResumed": lambda e, b: h.ExecutionResumedEvent(**b, input=_S(e, "input")),
    "entityOperationSignaled": lambda e, b: h.EntityOperationSignaledEvent(
        **b,
        request_id=e.requestId,
        operation=e.operation,
        scheduled_time=optional_timestamp(e, "scheduledTime"),
        input=_S(e, "input"),
        target_instance_id=_S(e, "targetInstanceId"),
    ),
    "entityOperationCalled": _entity_called,
    "entityOperationCompleted": lambda e, b: h.EntityOperationCompletedEvent(
        **b, request_id=e.requestId, output=_S(e, "output")
    ),
    "entityOperationFailed": lambda e, b: h.EntityOperationFailedEvent(
        **b, request_id=e.requestId, failure_details=optional_failure(e, "failureDetails")
    ),
    "entityLockRequested": lambda e, b: h.EntityLockRequestedEvent(
        **b,
        critical_section_id=e.criticalSectionId,
        lock_set=list(e.lockSet),
        position=e.position,
        parent_instance_id=_S(e, "parentInstanceId"),
    ),
    "entityLockGranted": lambda e, b: h.EntityLockGrantedEvent(**b, critical_section_id=e.criticalSectionId),
    "entityUnlockSent": lambda e, b: h.EntityUnlockSentEvent(
        **b,
        critical_section_id=e.criticalSectionId,
        parent_instance_id=_S(e, "parentInstanceId"),
        target_instance_id=_S(e, "targetInstanceId"),
    ),
    "executionRewound": _execution_rewound,
}


def history_event_from_pb(event: pb.HistoryEvent) -> h.HistoryEvent:
    """The public history event for a wire event.

    Raises:
        HistoryEventError: the event has no kind, or one this SDK does not know (a ``ProtocolError`` and a
            ``ValueError``).
    """
    kind = event.WhichOneof("eventType")
    if kind is None:
        raise HistoryEventError(f"history event {event.eventId} has no event type")
    convert = _HISTORY.get(kind)
    if convert is None:
        raise HistoryEventError(f"history event {event.eventId} has an unsupported type {kind!r}")
    base = {"event_id": event.eventId, "timestamp": from_timestamp(event.timestamp)}
    return convert(getattr(event, kind), base)
