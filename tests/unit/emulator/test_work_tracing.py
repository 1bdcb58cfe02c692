"""The emulator's work-item spans without OpenTelemetry: which phases a lease and its completion make."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from dtscale_emulator.dispatch.streams import Lease, StreamState
from dtscale_emulator.engine import events
from dtscale_emulator.engine.entities import EntityWork
from dtscale_emulator.engine.work import ActivityWork, OrchestrationWork
from dtscale_emulator.errors import FailedPreconditionError
from dtscale_emulator.ops.tracing import Phase, WorkTracer
from dtscale_emulator.protocol import StringValue, pb
from dtscale_emulator.storage import NameFilter

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
NS = 1_000_000_000
TRACE = 0x0AF7651916CD43DD8448EB211C80319C
CREATE = 0xB7AD6B7169203331
ORCHESTRATION = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE:032x}-{CREATE:016x}-01"


def ns(when: datetime) -> int:
    return int(when.timestamp()) * NS


class Clock:
    def __init__(self) -> None:
        self.value = ns(T0 + timedelta(seconds=10))

    def __call__(self) -> int:
        self.value += NS
        return self.value


@pytest.fixture
def recorded() -> Iterator[tuple[WorkTracer, list[Phase]]]:
    phases: list[Phase] = []

    class Sink:
        def record(self, phase: Phase) -> None:
            phases.append(phase)

    yield WorkTracer(Sink(), Clock()), phases


def stream() -> StreamState:
    return StreamState("hub", {"orchestration": NameFilter()}, {"orchestration": 0})


def started(traceparent: str | None = TRACEPARENT) -> pb.HistoryEvent:
    context = pb.TraceContext(traceParent=traceparent) if traceparent is not None else None
    return events.event(T0, executionStarted=pb.ExecutionStartedEvent(name="order", parentTraceContext=context))


def orchestration(*new: pb.HistoryEvent, past: tuple[pb.HistoryEvent, ...] = (), own: int | None = None) -> Lease:
    request = pb.OrchestratorRequest(
        instanceId="i1", newEvents=[events.orchestrator_started(T0), *new], pastEvents=past
    )
    if own is not None:
        request.orchestrationTraceContext.spanID.CopyFrom(StringValue(value=f"{own:016x}"))
    work = OrchestrationWork("i1", [1], request, len(past), True)
    return Lease("token", "orchestration", "hub", stream(), work, ns(T0 + timedelta(seconds=5)))


def activity(traceparent: str | None = f"00-{TRACE:032x}-{0x1111:016x}-01") -> Lease:
    request = pb.ActivityRequest(
        name="charge", taskId=3, orchestrationInstance=pb.OrchestrationInstance(instanceId="i1")
    )
    if traceparent is not None:
        request.parentTraceContext.CopyFrom(pb.TraceContext(traceParent=traceparent))
    return Lease("t2", "activity", "hub", stream(), ActivityWork(7, request), ns(T0 + timedelta(seconds=30)))


def turn(*actions: pb.OrchestratorAction, own: int | None = ORCHESTRATION) -> pb.OrchestratorResponse:
    response = pb.OrchestratorResponse(instanceId="i1", completionToken="token", actions=actions)
    if own is not None:
        response.orchestrationTraceContext.spanID.CopyFrom(StringValue(value=f"{own:016x}"))
    return response


def summary(phases: list[Phase]) -> list[tuple[str, int, int, int]]:
    return [(p.name, p.parent.span_id, p.start_ns, p.end_ns) for p in phases]


def test_a_first_turn_waits_under_the_request_and_commits_under_the_orchestration(
    recorded: tuple[WorkTracer, list[Phase]],
) -> None:
    tracer, phases = recorded
    lease = orchestration(started())
    tracer.dispatched(lease)
    schedule = pb.OrchestratorAction(id=3, scheduleTask=pb.ScheduleTaskAction(name="charge"))
    with tracer.completing(lease, turn(schedule)):
        pass
    leased, received, committed = ns(T0 + timedelta(seconds=5)), ns(T0) + 11 * NS, ns(T0) + 12 * NS
    assert summary(phases) == [
        ("emulator.queue:order", CREATE, ns(T0), leased),
        ("emulator.dispatch:order", CREATE, leased, received),
        ("emulator.commit:order", ORCHESTRATION, received, committed),
    ]
    assert {p.parent.trace_id for p in phases} == {TRACE}
    assert phases[2].attributes == {
        "durabletask.type": "orchestration",
        "durabletask.task.name": "order",
        "durabletask.task.instance_id": "i1",
        "emulator.new_events": 2,
        "emulator.task_hub": "hub",
        "emulator.actions": 1,
    }
    # The activity it scheduled was queued from that commit until it was leased.
    phases.clear()
    tracer.dispatched(activity())
    assert summary(phases) == [("emulator.queue:charge", 0x1111, committed, ns(T0 + timedelta(seconds=30)))]
    assert phases[0].attributes["durabletask.task.task_id"] == 3


def test_a_session_continuation_without_the_history_stays_in_the_trace(
    recorded: tuple[WorkTracer, list[Phase]],
) -> None:
    tracer, phases = recorded
    tracer.dispatched(orchestration(started()))
    phases.clear()
    fired = events.event(
        T0 + timedelta(seconds=1), timerFired=pb.TimerFiredEvent(fireAt=events.ts(T0 + timedelta(seconds=3)))
    )
    raised = events.event(T0 + timedelta(seconds=4), eventRaised=pb.EventRaisedEvent(name="go"))
    tracer.dispatched(orchestration(raised, fired, own=ORCHESTRATION))
    # Queued from the earliest moment a new event could be delivered: the timer's firing, not its creation.
    assert summary(phases) == [("emulator.queue:order", ORCHESTRATION, ns(T0) + 3 * NS, ns(T0 + timedelta(seconds=5)))]


def test_work_without_trace_context_records_nothing(recorded: tuple[WorkTracer, list[Phase]]) -> None:
    tracer, phases = recorded
    for lease in (orchestration(started(None)), orchestration(started("00-zero-ids-01")), activity(None)):
        tracer.dispatched(lease)
        with tracer.completing(lease, turn() if lease.kind == "orchestration" else pb.ActivityResponse()):
            pass
    entity = EntityWork("@counter@a", [1], [], pb.EntityRequest(instanceId="@counter@a"))
    tracer.dispatched(Lease("t3", "entity", "hub", stream(), entity))
    assert phases == []


def test_an_untraced_activity_still_takes_its_scheduling_time(recorded: tuple[WorkTracer, list[Phase]]) -> None:
    tracer, phases = recorded
    lease = orchestration(started())
    schedule = pb.OrchestratorAction(id=3, scheduleTask=pb.ScheduleTaskAction(name="charge"))
    with tracer.completing(lease, turn(schedule)):
        pass
    tracer.dispatched(activity(None))  # leased without trace context: the remembered time goes with it
    phases.clear()
    tracer.dispatched(activity())  # the same task ID leased again: no longer known when it was queued
    assert phases == []


def test_a_refused_completion_marks_its_commit_failed(recorded: tuple[WorkTracer, list[Phase]]) -> None:
    tracer, phases = recorded
    lease = activity()
    refused = FailedPreconditionError("the instance is gone")
    with pytest.raises(FailedPreconditionError), tracer.completing(lease, pb.ActivityResponse()):
        raise refused
    assert [(p.name, p.error) for p in phases] == [
        ("emulator.dispatch:charge", None),
        ("emulator.commit:charge", refused),
    ]
