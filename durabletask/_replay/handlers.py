"""One small handler per history event kind, the handler table keyed by the event's oneof name, and the loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from durabletask._errors import ProtocolError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import OrchestratorNotRegisteredError
from durabletask._replay import nondeterminism
from durabletask._replay.activity_control import CONTROL_EVENT, CONTROL_TAG
from durabletask._replay.controlled_activity import finish_turn, parse_control_event
from durabletask._replay.runtime import RuntimeContext
from durabletask._replay.tasks import RetryableTask, TimerTask

Handler = Callable[[RuntimeContext, pb.HistoryEvent], None]
OrchestratorLookup = Callable[[str], Callable[..., Any] | None]

_CONTROL_KEY = CONTROL_EVENT.casefold()

#: Events that are applied even while the orchestration is suspended.
UNSUSPENDABLE = frozenset({"executionResumed", "executionTerminated"})
# Where the events a turn received end: the next turn, or the events recording what the turn decided (a backend
# stores them after the events the turn received).
TURN_ENDS = frozenset(
    {
        "orchestratorStarted",
        "orchestratorCompleted",
        "taskScheduled",
        "subOrchestrationInstanceCreated",
        "timerCreated",
        "eventSent",
        "entityOperationSignaled",
        "entityOperationCalled",
        "entityLockRequested",
        "entityUnlockSent",
        "executionCompleted",
        "continueAsNew",
    }
)


def on_orchestrator_started(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    # About half the events of a replayed history: the timestamp is read only if the orchestrator asks the time.
    rt.clock_event = event


def make_execution_started(lookup: OrchestratorLookup) -> Handler:
    """The ``executionStarted`` handler, resolving orchestrator names with ``lookup``."""

    def on_execution_started(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
        started = event.executionStarted
        if rt.started:
            raise ProtocolError(f"history of '{rt.instance_id}' holds more than one executionStarted event")
        if not rt.has_clock and event.HasField("timestamp"):
            rt.set_clock(event.timestamp)
        parent = started.parentInstance.orchestrationInstance.instanceId if started.HasField("parentInstance") else None
        rt.set_started_info(started.version.value if started.HasField("version") else None, parent or None)
        rt.execution_id = started.orchestrationInstance.executionId.value
        rt.stream.execution_id = started.orchestrationInstance.executionId.value
        rt.started = True
        rt.name = started.name
        fn = lookup(started.name)
        if fn is None:
            raise OrchestratorNotRegisteredError(f"A '{started.name}' orchestrator was not registered.")
        rt.start(started.name, fn, started.input.value if started.HasField("input") else None)

    return on_execution_started


# ---- scheduling confirmations: the recorded call must be the one the code makes now ---------------


def on_task_scheduled(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    # Hot path of every replay: the common checks are inlined.
    action = rt.pending.pop(event.eventId, None)
    if action is None and rt.sent:
        action = rt.sent.pop(event.eventId, None)
    if action is None or action.event_kind != "taskScheduled" or action.name != event.taskScheduled.name:
        raise nondeterminism.mismatch("taskScheduled", event, action)
    if rt.has_bounded_activities:
        call = rt.activity_controls.get(event.eventId)
        if call is not None:
            call.on_scheduled(event.eventId, event.taskScheduled.tags.get(CONTROL_TAG))


def _confirm(kind: str) -> Handler:
    def on_scheduled(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
        nondeterminism.check(kind, event, rt.confirm(event.eventId))

    on_scheduled.__name__ = f"on_{kind}"
    return on_scheduled


# ---- completions ----------------------------------------------------------------------------------


def on_task_completed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    completed = event.taskCompleted
    task = rt.open.pop(completed.taskScheduledId, None)
    if task is None:
        return  # a completion for a call the code no longer waits for (e.g. after cancellation)
    task.complete(rt.codec.decode(completed.result.value, task._expected_type))
    rt.resume()


def on_sub_orchestration_completed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    completed = event.subOrchestrationInstanceCompleted
    task = rt.open.pop(completed.taskScheduledId, None)
    if task is None:
        return
    task.complete(rt.codec.decode(completed.result.value, task._expected_type))
    rt.resume()


def _fail_task(rt: RuntimeContext, task_id: int, details: pb.TaskFailureDetails, what: str) -> None:
    task = rt.open.pop(task_id, None)
    if task is None:
        return
    if isinstance(task, RetryableTask):
        delay = task.compute_next_delay(details, rt.current_utc_datetime)
        if delay is not None:
            retry_timer = rt.create_timer(delay)
            retry_timer.set_retryable_parent(task)
            return
        details = task.failure_to_report(details)
    task.fail(f"{what} #{task_id} failed: {details.errorMessage}", details)
    rt.resume()


def on_task_failed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    failed = event.taskFailed
    _fail_task(rt, failed.taskScheduledId, failed.failureDetails, f"{rt.instance_id}: Activity task")


def on_sub_orchestration_failed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    failed = event.subOrchestrationInstanceFailed
    _fail_task(rt, failed.taskScheduledId, failed.failureDetails, "Sub-orchestration task")


def on_timer_fired(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    fired = event.timerFired
    timer = rt.open.pop(fired.timerId, None)
    if not isinstance(timer, TimerTask) or rt.done:
        return
    # The next piece of a split timer is computed from the piece's own scheduled time, not the
    # recorded one, so a backend that rounds timestamps cannot add a spurious extra timer.
    reached = timer._chunk_fire_at or fired.fireAt.ToDatetime()
    next_fire_at = timer._next_fire_at(reached)
    if next_fire_at is not None:
        rt.schedule_timer_chunk(timer, next_fire_at)
        return
    timer.complete(None)
    rt.resume()


def on_event_raised(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    raised = event.eventRaised
    key = raised.name.casefold()
    raw = raised.input.value if raised.HasField("input") else None
    if rt.has_bounded_activities and key == _CONTROL_KEY and _on_activity_report(rt, event, raw):
        return
    waiter = None if rt.done else rt.inbox.pop_waiter(key)
    if waiter is None:
        # Kept for a later wait, or carried over by continue_as_new(save_events=True): as its text, taken
        # now from what arrived with the work item (a later turn of a session would fetch it again).
        rt.inbox.buffer(key, raised.name, rt.codec.resolve(raw))
        return
    value = rt.codec.decode(raw, waiter._expected_type)
    del raw  # the text is not needed once decoded: not kept through the orchestration's next step
    waiter.complete(value)
    del value
    rt.resume()


def _on_activity_report(rt: RuntimeContext, event: pb.HistoryEvent, raw: str | None) -> bool:
    """A bounded activity's start or heartbeat: handled (``True``) if it is one for a call of this execution."""
    report = parse_control_event(raw)
    if report is None:
        return False
    call = rt.activity_controls.get(report.seq)
    if call is not None and not rt.done:  # else a report of an attempt given up, or of an ended call
        at = event.timestamp.ToDatetime() if event.HasField("timestamp") else rt.current_utc_datetime
        call.on_control_event(report, at)
        rt.resume()
    return True


# ---- lifecycle ------------------------------------------------------------------------------------


def on_execution_suspended(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    rt.suspended = True


def on_execution_terminated(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    terminated = event.executionTerminated
    rt.terminate(terminated.input.value if terminated.HasField("input") else None)


def on_ignored(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    """Bookkeeping events with no effect on the orchestrator's state."""


# The handlers every table starts with that depend on nothing of the table's: built once, since a table is
# made per executor (per work item without extended sessions) and its closures were garbage per turn.
_SHARED: dict[str, Handler] = {
    "orchestratorStarted": on_orchestrator_started,
    "taskScheduled": on_task_scheduled,
    "taskCompleted": on_task_completed,
    "taskFailed": on_task_failed,
    "subOrchestrationInstanceCreated": _confirm("subOrchestrationInstanceCreated"),
    "subOrchestrationInstanceCompleted": on_sub_orchestration_completed,
    "subOrchestrationInstanceFailed": on_sub_orchestration_failed,
    "timerCreated": _confirm("timerCreated"),
    "timerFired": on_timer_fired,
    "eventSent": _confirm("eventSent"),
    "eventRaised": on_event_raised,
    "executionSuspended": on_execution_suspended,
    "executionTerminated": on_execution_terminated,
    **dict.fromkeys(
        (
            "orchestratorCompleted",
            "executionCompleted",
            "genericEvent",
            "historyState",
            "continueAsNew",
            "executionRewound",
        ),
        on_ignored,
    ),
}


class HandlerTable:
    """Applies history events to a runtime through a table of per-kind handlers."""

    def __init__(self, lookup: OrchestratorLookup) -> None:
        self.table: dict[str, Handler] = {
            **_SHARED,
            "executionStarted": make_execution_started(lookup),
            "executionResumed": self._on_execution_resumed,
        }

    def register(self, kind: str, handler: Handler) -> None:
        """Install or replace the handler for one event kind (how entity support plugs in)."""
        self.table[kind] = handler

    def apply(self, rt: RuntimeContext, events: Iterable[pb.HistoryEvent]) -> None:
        """Apply ``events`` in order. Events arriving while suspended wait for ``executionResumed``."""
        table = self.table
        for event in events:
            kind = event.WhichOneof("eventType")
            if rt.at_turn_end and kind in TURN_ENDS:
                finish_turn(rt)  # the decisions a turn left for its end precede the turn's recorded actions
            if rt.suspended and kind not in UNSUSPENDABLE:
                rt.suspended_events.append(event)
                continue
            handler = table.get(kind)  # no kind at all (None) is no key either: raised below
            if handler is None:
                raise ProtocolError(f"history event {event.eventId} has unknown kind {kind!r}")
            handler(rt, event)

    def _on_execution_resumed(self, rt: RuntimeContext, event: pb.HistoryEvent) -> None:
        if not rt.suspended:
            return
        rt.suspended = False
        held, rt.suspended_events = rt.suspended_events, []
        self.apply(rt, held)
