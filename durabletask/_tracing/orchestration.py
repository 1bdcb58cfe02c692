"""Tracing of orchestration turns, read from the history and the turn's actions (the replay core stays pure).

An orchestration is one SERVER span for its whole execution, recorded once when it completes. Its span ID
is chosen on the first turn and sent to the backend in ``OrchestratorResponse.orchestrationTraceContext``,
which returns it with every later work item (so any worker, after any restart, parents alike). Each
activity or sub-orchestration call gets a CLIENT span whose ID travels ahead in the action's
``parentTraceContext`` (the callee's SERVER span is its child); it is recorded when the result arrives,
from the two events' timestamps. Only events new in this turn record spans: replayed ones already did.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from google.protobuf import timestamp_pb2, wrappers_pb2

from durabletask import _trace_context as tc
from durabletask import _tracing as t
from durabletask._proto import orchestrator_service_pb2 as pb

_SAMPLED = 0x01
_RESULTS = ("taskCompleted", "taskFailed", "subOrchestrationInstanceCompleted", "subOrchestrationInstanceFailed")
_KEPT_SESSIONS = 10_000  # instances whose turn state is kept for continuations (extended sessions)


@dataclass(slots=True)
class _Call:
    kind: str  # "activity" or "orchestration"
    name: str
    version: str | None
    context: tc.Parent | None
    scheduled_ns: int
    instance_id: str | None = None  # a sub-orchestration's own ID, which its CLIENT span names


@dataclass(slots=True)
class _State:
    """What the history told so far about one execution."""

    instance_id: str
    name: str = ""
    parent: tc.Parent | None = None
    execution_id: str = ""
    started: bool = False  # its executionStarted was read
    calls: dict[int, _Call] = field(default_factory=dict)
    timers: dict[int, tuple[str, int]] = field(default_factory=dict)  # id -> (fire_at, created ns)


@dataclass(slots=True)
class Turn:
    state: _State
    own: tc.Parent | None  # the orchestration span's context, parent of everything it schedules
    start_ns: int
    record: bool  # spans are recorded (emission on and OpenTelemetry installed)
    known_ids: bool  # spans with IDs chosen ahead can be recorded

    @property
    def log_ids(self) -> tuple[str, str] | None:
        """The orchestration's trace and span IDs, for the replay-safe logger's records."""
        if self.own is None:
            return None
        return f"{self.own.trace_id:032x}", f"{self.own.span_id:016x}"


def _ns(event: pb.HistoryEvent) -> int:
    return event.timestamp.ToNanoseconds() if event.HasField("timestamp") else time.time_ns()


def _opt(message: object, name: str) -> str | None:
    has = getattr(message, "HasField")  # noqa: B009
    return getattr(message, name).value if has(name) else None


class OrchestrationTracer:
    """Adds trace context to a turn's response and records the spans the turn's new events complete."""

    def __init__(self, *, emit: bool, sessions: bool = True) -> None:
        self._emit = emit
        self._keep = sessions  # the worker resumes kept orchestrations from their new events only
        self._sessions: OrderedDict[str, _State] = OrderedDict()

    def begin(
        self, request: pb.OrchestratorRequest, past: Iterable[pb.HistoryEvent], *, continuation: bool = False
    ) -> Turn:
        """Reads the turn's history; the result names the orchestration's span before its code runs."""
        state = self._sessions.pop(request.instanceId, None) if continuation else None
        record = t.recording(self._emit)
        if state is None:
            state = _State(request.instanceId)
            events: Iterable[pb.HistoryEvent] = chain(past, request.newEvents)
        else:
            events = request.newEvents
        for event in events:
            self._index(state, event)
            if not record and state.started:
                break  # only propagating: the parent context is all that is needed
        return self._turn(request, state, record)

    def finish(self, turn: Turn, request: pb.OrchestratorRequest, response: pb.OrchestratorResponse) -> None:
        """Records the spans the turn completed and adds trace context to its response."""
        if turn.record:
            for event in request.newEvents:
                self._completed(turn, event)
        done = self._actions(turn, response.actions)
        self._respond(request, response, turn)
        if self._keep and not done:
            self._sessions[request.instanceId] = turn.state
            while len(self._sessions) > _KEPT_SESSIONS:
                self._sessions.popitem(last=False)

    def apply(
        self,
        request: pb.OrchestratorRequest,
        past: Iterable[pb.HistoryEvent],
        response: pb.OrchestratorResponse,
        *,
        continuation: bool = False,
    ) -> None:
        self.finish(self.begin(request, past, continuation=continuation), request, response)

    # Reading the history ---------------------------------------------------------------------------
    def _index(self, state: _State, event: pb.HistoryEvent) -> None:
        which = event.WhichOneof("eventType")
        if which == "executionStarted":
            started = event.executionStarted
            state.name = started.name
            state.parent = tc.field(started, "parentTraceContext")
            state.execution_id = started.orchestrationInstance.executionId.value
            state.started = True
            state.calls.clear()
            state.timers.clear()
        elif which == "taskScheduled":
            e = event.taskScheduled
            ctx = tc.field(e, "parentTraceContext")
            state.calls[event.eventId] = _Call("activity", e.name, _opt(e, "version"), ctx, _ns(event))
        elif which == "subOrchestrationInstanceCreated":
            s = event.subOrchestrationInstanceCreated
            ctx = tc.field(s, "parentTraceContext")
            call = _Call("orchestration", s.name, _opt(s, "version"), ctx, _ns(event), s.instanceId)
            state.calls[event.eventId] = call
        elif which == "timerCreated":
            fire_at = event.timerCreated.fireAt.ToDatetime().isoformat()
            state.timers[event.eventId] = (fire_at, _ns(event))

    def _turn(self, request: pb.OrchestratorRequest, state: _State, record: bool) -> Turn:
        known_ids = record and t.api().can_record_known_ids()
        saved = request.orchestrationTraceContext if request.HasField("orchestrationTraceContext") else None
        start_ns = time.time_ns()
        if saved is not None and saved.HasField("spanStartTime"):
            start_ns = saved.spanStartTime.ToNanoseconds()
        own = state.parent
        if known_ids:
            span_id = _saved_span_id(saved) or tc.new_span_id()
            base = state.parent or tc.Parent(
                tc.stable_trace_id(state.instance_id, state.execution_id), span_id, _SAMPLED
            )
            own = base.child(span_id)
        return Turn(state, own, start_ns, record, known_ids)

    # Spans of completed calls and timers -------------------------------------------------------------
    def _completed(self, turn: Turn, event: pb.HistoryEvent) -> None:
        which = event.WhichOneof("eventType")
        if which in _RESULTS:
            self._call_done(turn, event, getattr(event, which), failed=which.endswith("Failed"))
        elif which == "timerFired":
            self._timer_fired(turn, event.timerFired.timerId)

    def _call_done(self, turn: Turn, event: pb.HistoryEvent, done: Any, *, failed: bool) -> None:
        """The CLIENT span of an activity or sub-orchestration call, from scheduling to result."""
        call = turn.state.calls.pop(done.taskScheduledId, None)
        if call is None or not turn.known_ids or call.context is None or not _own_call(turn, call):
            return
        instance_id = call.instance_id or turn.state.instance_id
        attrs = {t.ATTR_TYPE: call.kind, t.ATTR_NAME: call.name, t.ATTR_INSTANCE_ID: instance_id}
        attrs[t.ATTR_TASK_ID] = str(done.taskScheduledId)
        if call.version:
            attrs[t.ATTR_VERSION] = call.version
        t.api().record_span(
            t.span_name(call.kind, call.name, call.version), "client", attrs,
            context=call.context, parent=turn.own, start_ns=call.scheduled_ns, end_ns=_ns(event),
            error=done.failureDetails.errorMessage if failed else None,
        )  # fmt: skip

    def _timer_fired(self, turn: Turn, timer_id: int) -> None:
        """An INTERNAL span from the timer's creation to its firing."""
        state = turn.state
        timer = state.timers.pop(timer_id, None)
        if timer is None or not turn.record:
            return
        attrs = {
            t.ATTR_TYPE: "timer",
            t.ATTR_NAME: state.name,
            t.ATTR_INSTANCE_ID: state.instance_id,
            t.ATTR_TASK_ID: str(timer_id),
            t.ATTR_FIRE_AT: timer[0],
        }
        t.api().record_span(
            f"orchestration:{state.name}:timer", "internal", attrs,
            context=None, parent=turn.own, start_ns=timer[1], end_ns=time.time_ns(),
        )  # fmt: skip

    # The turn's actions ------------------------------------------------------------------------------
    def _actions(self, turn: Turn, actions: Sequence[pb.OrchestratorAction]) -> bool:
        """Sends trace context with the calls; records sent events and a completion. True when complete."""
        done = False
        for action in actions:
            which = action.WhichOneof("orchestratorActionType")
            if which in ("scheduleTask", "createSubOrchestration"):
                call = getattr(action, which)
                if not call.HasField("parentTraceContext") and turn.own is not None:
                    ctx = turn.own.child(tc.new_span_id()) if turn.known_ids else turn.own
                    call.parentTraceContext.CopyFrom(ctx.to_proto())
                if not turn.record:
                    continue
                # A kept session's next work item brings the result but not the scheduling event.
                kind = "activity" if which == "scheduleTask" else "orchestration"
                context = tc.field(call, "parentTraceContext")
                child = call.instanceId if which == "createSubOrchestration" else None
                version = _opt(call, "version")
                turn.state.calls[action.id] = _Call(kind, call.name, version, context, time.time_ns(), child)
            elif which == "createTimer" and turn.record:
                turn.state.timers[action.id] = (action.createTimer.fireAt.ToDatetime().isoformat(), time.time_ns())
            elif which == "sendEvent" and turn.record:
                send = action.sendEvent
                attrs = {
                    t.ATTR_TYPE: "event",
                    t.ATTR_NAME: send.name,
                    t.ATTR_INSTANCE_ID: turn.state.instance_id,
                    t.ATTR_TARGET_INSTANCE_ID: send.instance.instanceId,
                }
                t.api().record_span(
                    t.span_name("orchestration_event", send.name), "producer", attrs,
                    context=None, parent=turn.own, start_ns=None,
                )  # fmt: skip
            elif which == "completeOrchestration":
                done = True
                if turn.record:
                    self._record_orchestration(turn, action.completeOrchestration)
        return done

    def _record_orchestration(self, turn: Turn, complete: pb.CompleteOrchestrationAction) -> None:
        state = turn.state
        failed = complete.orchestrationStatus == pb.ORCHESTRATION_STATUS_FAILED
        attrs = {
            t.ATTR_TYPE: "orchestration",
            t.ATTR_NAME: state.name,
            t.ATTR_INSTANCE_ID: state.instance_id,
            t.ATTR_STATUS: "Failed" if failed else "Completed",
        }
        t.api().record_span(
            t.span_name("orchestration", state.name), "server", attrs,
            context=turn.own if turn.known_ids else None, parent=state.parent, start_ns=turn.start_ns,
            error=complete.failureDetails.errorMessage if failed else None,
        )  # fmt: skip

    def _respond(self, request: pb.OrchestratorRequest, response: pb.OrchestratorResponse, turn: Turn) -> None:
        if not turn.record:
            if request.HasField("orchestrationTraceContext"):
                response.orchestrationTraceContext.CopyFrom(request.orchestrationTraceContext)
            return
        saved = pb.OrchestrationTraceContext()
        started = timestamp_pb2.Timestamp()
        started.FromNanoseconds(turn.start_ns)
        saved.spanStartTime.CopyFrom(started)
        if turn.known_ids and turn.own is not None:
            saved.spanID.CopyFrom(wrappers_pb2.StringValue(value=f"{turn.own.span_id:016x}"))
        response.orchestrationTraceContext.CopyFrom(saved)


def _saved_span_id(saved: pb.OrchestrationTraceContext | None) -> int | None:
    if saved is None or not saved.HasField("spanID"):
        return None
    try:
        return int(saved.spanID.value, 16) or None
    except ValueError:
        return None


def _own_call(turn: Turn, call: _Call) -> bool:
    """A call whose context is a span of its own (not the orchestration's, sent when none could be made)."""
    return call.context is not None and (turn.own is None or call.context.span_id != turn.own.span_id)
