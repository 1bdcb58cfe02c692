"""Builders for the history events the emulator itself creates (pure, no I/O)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone

from google.protobuf import timestamp_pb2, wrappers_pb2

from dtscale_emulator.protocol import StringValue, Timestamp, pb

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)
_LAST_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z, the last microsecond a Timestamp holds
TERMINAL_STATUSES = frozenset(
    {pb.ORCHESTRATION_STATUS_COMPLETED, pb.ORCHESTRATION_STATUS_FAILED, pb.ORCHESTRATION_STATUS_TERMINATED}
)


@functools.lru_cache(maxsize=256)
def _seconds_and_nanos(when: datetime) -> tuple[int, int]:
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp.seconds, stamp.nanos


def ts(when: datetime) -> timestamp_pb2.Timestamp:
    # One transaction stamps many events with the same instant; the conversion is done once.
    seconds, nanos = _seconds_and_nanos(when)
    return Timestamp(seconds=seconds, nanos=nanos)


def sv(value: str | None) -> wrappers_pb2.StringValue | None:
    return None if value is None else StringValue(value=value)


def opt(message: wrappers_pb2.StringValue, present: bool) -> str | None:
    """The value of an optional StringValue field, or ``None`` when the field is absent."""
    return message.value if present else None


def event(now: datetime, event_id: int = -1, **kind: object) -> pb.HistoryEvent:
    """A history event with one ``eventType`` set, e.g. ``event(now, taskCompleted=...)``."""
    return pb.HistoryEvent(eventId=event_id, timestamp=ts(now), **kind)  # type: ignore[arg-type]


def orchestrator_started(now: datetime) -> pb.HistoryEvent:
    return event(now, orchestratorStarted=pb.OrchestratorStartedEvent())


def execution_started(
    now: datetime,
    *,
    instance_id: str,
    execution_id: str,
    name: str,
    version: str | None,
    input: str | None,
    tags: dict[str, str] | None = None,
    parent: pb.ParentInstanceInfo | None = None,
    scheduled_start: datetime | None = None,
    trace: pb.TraceContext | None = None,
) -> pb.HistoryEvent:
    started = pb.ExecutionStartedEvent(
        name=name,
        version=sv(version),
        input=sv(input),
        orchestrationInstance=pb.OrchestrationInstance(instanceId=instance_id, executionId=sv(execution_id)),
        parentInstance=parent,
        tags=tags or {},
        parentTraceContext=trace,
    )
    if scheduled_start is not None:
        started.scheduledStartTimestamp.CopyFrom(ts(scheduled_start))
    return event(now, executionStarted=started)


def parent_info(
    task_id: int, instance_id: str, execution_id: str | None, name: str | None = None, version: str | None = None
) -> pb.ParentInstanceInfo:
    """What a sub-orchestration knows of its parent: who it is and which of its tasks is waiting."""
    return pb.ParentInstanceInfo(
        taskScheduledId=task_id,
        name=sv(name),
        version=sv(version),
        orchestrationInstance=pb.OrchestrationInstance(instanceId=instance_id, executionId=sv(execution_id)),
    )


def event_raised(now: datetime, name: str, input: str | None) -> pb.HistoryEvent:
    return event(now, eventRaised=pb.EventRaisedEvent(name=name, input=sv(input)))


def terminated(now: datetime, reason: str | None, recurse: bool) -> pb.HistoryEvent:
    return event(now, executionTerminated=pb.ExecutionTerminatedEvent(input=sv(reason), recurse=recurse))


def suspended(now: datetime, reason: str | None) -> pb.HistoryEvent:
    return event(now, executionSuspended=pb.ExecutionSuspendedEvent(input=sv(reason)))


def resumed(now: datetime, reason: str | None) -> pb.HistoryEvent:
    return event(now, executionResumed=pb.ExecutionResumedEvent(input=sv(reason)))


def rewound(now: datetime, reason: str | None, parent_execution_id: str | None = None) -> pb.HistoryEvent:
    return event(
        now,
        executionRewound=pb.ExecutionRewoundEvent(reason=sv(reason), parentExecutionId=sv(parent_execution_id)),
    )


def task_result(now: datetime, response: pb.ActivityResponse) -> pb.HistoryEvent:
    """The taskCompleted/taskFailed event an activity response turns into."""
    if response.HasField("failureDetails"):
        return event(
            now,
            taskFailed=pb.TaskFailedEvent(taskScheduledId=response.taskId, failureDetails=response.failureDetails),
        )
    return event(
        now,
        taskCompleted=pb.TaskCompletedEvent(
            taskScheduledId=response.taskId, result=response.result if response.HasField("result") else None
        ),
    )


#: How a serialized orchestratorCompleted event ends: its empty field 15, written after eventId and timestamp.
_ORCHESTRATOR_COMPLETED_TAIL = b"\x7a\x00"


def without_orchestrator_completed(raw: Sequence[bytes]) -> list[bytes]:
    """A stored history without orchestratorCompleted events, which DTS neither stores nor sends.

    Stores written by earlier versions of the emulator hold one per turn; they are left out whenever a history
    is read, so such stores serve what DTS serves without being rewritten. The tail check only saves parsing
    the other events: an event is dropped only once parsed and found to be one.
    """
    return [
        event
        for event in raw
        if not (
            event.endswith(_ORCHESTRATOR_COMPLETED_TAIL)
            and pb.HistoryEvent.FromString(event).HasField("orchestratorCompleted")
        )
    ]


def failure(error_type: str, message: str) -> pb.TaskFailureDetails:
    return pb.TaskFailureDetails(errorType=error_type, errorMessage=message, isNonRetriable=True)


def to_micros(when: datetime) -> int:
    """Microseconds since the Unix epoch for an aware datetime, exactly.

    Integer arithmetic, not ``timestamp() * 1e6``: a float holds whole microseconds only up to 2**53 (the year
    2255), and beyond it rounding could carry a valid instant past the last one a Timestamp can hold.
    """
    return (when - _EPOCH) // _MICROSECOND


def from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def ts_micros(micros: int) -> timestamp_pb2.Timestamp:
    """A Timestamp; a stored instant past the last one it can hold (written by older versions) is served as that."""
    stamp = Timestamp()
    stamp.FromMicroseconds(min(micros, _LAST_MICROS))
    return stamp


def to_datetime(stamp: timestamp_pb2.Timestamp) -> datetime:
    return stamp.ToDatetime(tzinfo=timezone.utc)


def started_trace(history: Iterable[pb.HistoryEvent]) -> pb.TraceContext | None:
    """The trace context of the first ``executionStarted`` in ``history``, if it carries one."""
    for event in history:
        if event.HasField("executionStarted"):
            started = event.executionStarted
            return started.parentTraceContext if started.HasField("parentTraceContext") else None
    return None


def inherit_trace(started: pb.HistoryEvent, earlier: Iterable[pb.HistoryEvent]) -> None:
    """Gives ``started`` the trace context ``earlier`` was started with, unless it has one of its own."""
    if started.executionStarted.HasField("parentTraceContext"):
        return
    trace = started_trace(earlier)
    if trace is not None:
        started.executionStarted.parentTraceContext.CopyFrom(trace)
