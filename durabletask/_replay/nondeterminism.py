"""Matching recorded scheduling events against the calls the orchestrator makes now, and the mismatch messages."""

from __future__ import annotations

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.actions import PendingAction
from durabletask._replay.failures import NonDeterminismError

# Which context method records each kind of scheduling event, and how its name is read.
_RECORDED_METHOD = {
    "taskScheduled": "call_activity",
    "subOrchestrationInstanceCreated": "call_sub_orchestrator",
    "timerCreated": "create_timer",
    "eventSent": "send_event",
}

_ADVICE = (
    "The orchestrator code is not deterministic, or it changed after this instance started; "
    "keep code changes compatible with running instances or version the orchestrator."
)


def recorded_call(kind: str, event: pb.HistoryEvent) -> str:
    """How a recorded scheduling event reads in an error message."""
    method = _RECORDED_METHOD.get(kind, kind)
    if kind == "timerCreated":
        return f"{method}()"
    if kind == "eventSent":
        sent = event.eventSent
        return f"{method}({sent.instanceId!r}, {sent.name!r})"
    name = recorded_name(kind, event)
    return f"{method}({name!r})" if name else f"{method}()"


def recorded_name(kind: str, event: pb.HistoryEvent) -> str:
    """The name a scheduling event records (empty for kinds without one)."""
    if kind == "taskScheduled":
        return event.taskScheduled.name
    if kind == "subOrchestrationInstanceCreated":
        return event.subOrchestrationInstanceCreated.name
    if kind == "eventSent":
        return event.eventSent.name
    return ""


def mismatch(kind: str, event: pb.HistoryEvent, current: PendingAction | None) -> NonDeterminismError:
    """The error for a recorded event with ID ``event.eventId`` that the current code does not reproduce."""
    recorded = recorded_call(kind, event)
    now = f"calls {current.describe()}" if current is not None else "makes no call"
    return NonDeterminismError(
        f"Non-deterministic orchestration: history records {recorded} with ID {event.eventId}, "
        f"but the current code {now} with that ID. {_ADVICE}"
    )


def check(kind: str, event: pb.HistoryEvent, action: PendingAction | None) -> None:
    """Raise :class:`NonDeterminismError` unless ``action`` is the call the event recorded."""
    if action is None or action.event_kind != kind:
        raise mismatch(kind, event, action)
    if kind == "eventSent":
        sent = event.eventSent
        assert_same = getattr(action, "instance_id", None) == sent.instanceId
        if not assert_same or action.name.casefold() != sent.name.casefold():
            raise mismatch(kind, event, action)
    elif kind != "timerCreated" and action.name != recorded_name(kind, event):
        raise mismatch(kind, event, action)
