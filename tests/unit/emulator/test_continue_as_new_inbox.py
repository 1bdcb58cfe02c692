"""What a continued-as-new execution finds in its inbox: the started event, the carried-over events, then what
arrived while the turn that continued was out, in arrival order and each exactly once.

The interleavings are played by hand against the engine (no worker, no gRPC), so they do not depend on timing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from dtscale_emulator.engine.delivery import StartOptions
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.engine.work import OrchestrationWork
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import NameFilter, SqliteBackend

HUB = "h"
CONTINUED = pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW


@pytest.fixture
def engine() -> Iterator[Engine]:
    backend = SqliteBackend(None)
    yield Engine(backend, ManualClock())
    backend.close()


def _lease(engine: Engine, token: str) -> OrchestrationWork:
    found, _ = engine.lease_orchestrations(HUB, NameFilter(), [token], engine.clock.now() + timedelta(seconds=30))
    assert len(found) == 1, "the instance should be runnable"
    return found[0]


def _raised(work: OrchestrationWork) -> list[str]:
    return [e.eventRaised.input.value for e in work.request.newEvents if e.HasField("eventRaised")]


def _started_input(work: OrchestrationWork) -> list[int]:
    """The execution's input: the values seen by the generations before it."""
    started = [e for e in (*work.request.pastEvents, *work.request.newEvents) if e.HasField("executionStarted")]
    assert len(started) == 1, "one executionStarted per execution"
    return list(json.loads(started[0].executionStarted.input.value or "[]"))


def _continue(values: list[int], carryover: list[pb.HistoryEvent]) -> pb.OrchestratorResponse:
    done = pb.CompleteOrchestrationAction(orchestrationStatus=CONTINUED, carryoverEvents=carryover)
    done.result.value = json.dumps(values)
    return pb.OrchestratorResponse(actions=[pb.OrchestratorAction(id=0, completeOrchestration=done)])


def _items(engine: Engine, count: int) -> list[list[str]]:
    """The new events (after orchestratorStarted) of the next ``count`` work items, each completed with no actions."""
    kinds = []
    for n in range(count):
        item = _lease(engine, f"next-{n}")
        kinds.append([str(e.WhichOneof("eventType")) for e in item.request.newEvents][1:])
        engine.complete_orchestration(HUB, item, f"next-{n}", pb.OrchestratorResponse())
    return kinds


def _turn(work: OrchestrationWork) -> tuple[pb.OrchestratorResponse, int | None]:
    """What a ``save_events=True`` orchestrator does: take the first event, carry the others over."""
    raised = [e for e in work.request.newEvents if e.HasField("eventRaised")]
    if not raised:
        return pb.OrchestratorResponse(), None
    values = [*_started_input(work), int(raised[0].eventRaised.input.value)]
    carried = [pb.HistoryEvent(eventId=-1, eventRaised=e.eventRaised) for e in raised[1:]]
    return _continue(values, carried), values[-1]


def _raise(engine: Engine, *values: int) -> None:
    for value in values:
        engine.raise_event(HUB, "i", "e", str(value))


def test_events_raised_during_a_continuing_turn_come_after_the_carried_over_ones(engine: Engine) -> None:
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    _raise(engine, 1, 2)
    first = _lease(engine, "t1")
    assert _raised(first) == ["1", "2"]
    _raise(engine, 3, 4)  # while the turn is out: they wait behind the event it carries over
    response, _ = _turn(first)
    engine.complete_orchestration(HUB, first, "t1", response)

    second = _lease(engine, "t2")
    assert _started_input(second) == [1]
    assert _raised(second) == ["2", "3", "4"]
    kinds = [e.WhichOneof("eventType") for e in second.request.newEvents]
    assert kinds[:2] == ["orchestratorStarted", "executionStarted"]


@pytest.mark.parametrize(
    "arrivals",
    [
        # Before which lease (by number) each batch of values is raised; the rest arrive during that turn.
        {0: [1, 2, 3, 4, 5, 6, 7, 8]},
        {0: [1], 1: [2, 3, 4, 5, 6, 7, 8]},
        {0: [1, 2], 1: [3, 4], 2: [5], 3: [6, 7, 8]},
        {0: [1], 1: [2], 2: [3, 4, 5], 4: [6], 5: [7, 8]},
    ],
)
def test_every_event_is_seen_once_and_in_order_across_generations(
    engine: Engine, arrivals: dict[int, list[int]]
) -> None:
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    seen: list[int] = []
    turn = 0
    while len(seen) < 8:
        work = _lease(engine, f"t{turn}")
        _raise(engine, *arrivals.get(turn, []))  # arrive while this turn is out
        response, took = _turn(work)
        if took is not None:
            seen.append(took)
        engine.complete_orchestration(HUB, work, f"t{turn}", response)
        turn += 1
        assert turn < 40, f"no progress: seen {seen}"
    assert seen == [1, 2, 3, 4, 5, 6, 7, 8]
    final = _lease(engine, "last")
    assert _started_input(final) == seen and _raised(final) == []


@pytest.mark.parametrize(
    ("request_change", "expected"),
    [
        (lambda engine: engine.terminate(HUB, "i", "stop", recursive=False), "executionTerminated"),
        (lambda engine: engine.suspend(HUB, "i", "hold"), "executionSuspended"),
    ],
)
def test_a_lifecycle_request_during_a_continuing_turn_reaches_the_new_execution(
    engine: Engine, request_change: Callable[[Engine], None], expected: str
) -> None:
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    _raise(engine, 1)
    first = _lease(engine, "t1")
    request_change(engine)  # while the turn is out
    _raise(engine, 2)
    response, _ = _turn(first)
    engine.complete_orchestration(HUB, first, "t1", response)

    second = _lease(engine, "t2")
    kinds = [e.WhichOneof("eventType") for e in second.request.newEvents]
    if expected == "executionSuspended":  # a suspend makes a work item of its own; the event waits for the next
        assert kinds == ["orchestratorStarted", "executionStarted"]
        engine.complete_orchestration(HUB, second, "t2", _turn(second)[0])
        third = _lease(engine, "t3")
        assert [e.WhichOneof("eventType") for e in third.request.newEvents] == ["orchestratorStarted", expected]
    else:
        assert kinds == ["orchestratorStarted", "executionStarted", expected, "eventRaised"]


def test_a_resume_for_an_instance_that_is_not_suspended_is_not_handed_to_the_new_execution(engine: Engine) -> None:
    # Microsoft's worker fails an execution that is resumed without having been suspended.
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    _raise(engine, 1)
    first = _lease(engine, "t1")
    engine.suspend(HUB, "i", "go on", resume=True)
    _raise(engine, 2)
    response, _ = _turn(first)
    engine.complete_orchestration(HUB, first, "t1", response)

    second = _lease(engine, "t2")
    kinds = [e.WhichOneof("eventType") for e in second.request.newEvents]
    assert kinds == ["orchestratorStarted", "executionStarted", "eventRaised"]


def test_a_resume_after_the_suspend_a_continuing_turn_took_reaches_the_new_execution(engine: Engine) -> None:
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    _raise(engine, 1)
    engine.suspend(HUB, "i", "hold")
    first = _lease(engine, "t1")
    engine.suspend(HUB, "i", "go on", resume=True)
    _raise(engine, 2)
    response, _ = _turn(first)
    engine.complete_orchestration(HUB, first, "t1", response)

    # The suspend made a work item of its own, after the turn that continued: the new execution receives it.
    assert _items(engine, 3) == [["executionStarted"], ["executionSuspended"], ["executionResumed", "eventRaised"]]


def test_a_suspend_and_resume_during_a_continuing_turn_both_reach_the_new_execution(engine: Engine) -> None:
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    _raise(engine, 1)
    first = _lease(engine, "t1")
    engine.suspend(HUB, "i", "hold")
    _raise(engine, 2)
    engine.suspend(HUB, "i", "go on", resume=True)
    response, _ = _turn(first)
    engine.complete_orchestration(HUB, first, "t1", response)

    assert _items(engine, 3) == [["executionStarted"], ["executionSuspended"], ["eventRaised", "executionResumed"]]


def test_a_suspend_makes_a_work_item_of_its_own_so_later_events_reach_the_suspended_orchestration_later(
    engine: Engine,
) -> None:
    # Both SDKs set aside events that follow a suspend in the same work item, and forget them if that turn
    # continues as new: the work item stops at the suspend, and the rest wait for the next one.
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    _raise(engine, 1)
    engine.suspend(HUB, "i", "hold")
    _raise(engine, 2)
    # What the first turn schedules on its events is recorded after them, so a suspend in the same work item
    # would precede it, and Microsoft's worker sets such a record aside on replay: the suspend goes alone.
    assert _items(engine, 3) == [["executionStarted", "eventRaised"], ["executionSuspended"], ["eventRaised"]]


def test_a_suspend_queued_behind_a_continuing_turns_events_suspends_the_new_execution(engine: Engine) -> None:
    engine.create(HUB, StartOptions("i", "Orch", input="[]"))
    _raise(engine, 1, 2)
    engine.suspend(HUB, "i", "hold")
    _raise(engine, 3)
    first = _lease(engine, "t1")
    assert _raised(first) == ["1", "2"]  # the suspend waits for a work item of its own
    response, _ = _turn(first)  # takes 1, carries 2 over
    engine.complete_orchestration(HUB, first, "t1", response)
    engine.suspend(HUB, "i", "go on", resume=True)

    assert _items(engine, 3) == [
        ["executionStarted", "eventRaised"],
        ["executionSuspended"],
        ["eventRaised", "executionResumed"],
    ]
