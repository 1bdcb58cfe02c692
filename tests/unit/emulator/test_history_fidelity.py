"""The stored history holds what DTS stores: no orchestratorCompleted events, also when an older store has some."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from dtscale_emulator.engine import events
from dtscale_emulator.engine.delivery import StartOptions
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import NameFilter, SqliteBackend


@pytest.fixture
def store() -> Iterator[SqliteBackend]:
    backend = SqliteBackend(None)
    yield backend
    backend.close()


def kinds(history: list[pb.HistoryEvent]) -> list[str]:
    return [str(e.WhichOneof("eventType")) for e in history]


def _turn(engine: Engine, token: str, *actions: pb.OrchestratorAction) -> pb.OrchestratorRequest:
    """Leases the instance's next work item, completes it with ``actions``, and returns its request."""
    (work,), _ = engine.lease_orchestrations("h", NameFilter(), [token], engine.clock.now() + timedelta(seconds=30))
    engine.complete_orchestration("h", work, token, pb.OrchestratorResponse(actions=list(actions)))
    return work.request


def _schedule(task_id: int) -> pb.OrchestratorAction:
    return pb.OrchestratorAction(id=task_id, scheduleTask=pb.ScheduleTaskAction(name="Act"))


def _complete_activity(engine: Engine, token: str) -> None:
    (activity,), _ = engine.lease_activities("h", NameFilter(), [token], engine.clock.now() + timedelta(seconds=30))
    engine.complete_activity("h", activity.activity_id, token, pb.ActivityResponse(result=events.sv('"r"')))


def test_no_turn_stores_an_orchestrator_completed_event(store: SqliteBackend) -> None:
    engine = Engine(store, ManualClock())
    engine.create("h", StartOptions("i1", "Orch"))
    _turn(engine, "t1", _schedule(1))
    _complete_activity(engine, "a1")
    finish = pb.CompleteOrchestrationAction(orchestrationStatus=pb.ORCHESTRATION_STATUS_COMPLETED)
    second = _turn(engine, "t2", pb.OrchestratorAction(id=2, completeOrchestration=finish))
    assert kinds(list(second.pastEvents)) == ["orchestratorStarted", "executionStarted", "taskScheduled"]
    assert kinds(engine.history("h", "i1")) == [
        *("orchestratorStarted", "executionStarted", "taskScheduled"),
        *("orchestratorStarted", "taskCompleted", "executionCompleted"),
    ]


def test_a_store_with_orchestrator_completed_rows_serves_the_history_without_them(store: SqliteBackend) -> None:
    engine = Engine(store, ManualClock())
    engine.create("h", StartOptions("i1", "Orch"))
    _turn(engine, "t1", _schedule(1))
    # What an earlier version of the emulator stored after each turn.
    old_row = events.event(engine.clock.now(), orchestratorCompleted=pb.OrchestratorCompletedEvent())
    with store.transaction() as tx:
        tx.append_history("h", "i1", [old_row.SerializeToString()])
        assert tx.history_length("h", "i1") == 4
    _complete_activity(engine, "a1")

    second = _turn(engine, "t2", _schedule(2))
    assert kinds(list(second.pastEvents)) == ["orchestratorStarted", "executionStarted", "taskScheduled"]
    expected = [*("orchestratorStarted", "executionStarted", "taskScheduled"), "orchestratorStarted"]
    expected += ["taskCompleted", "taskScheduled"]
    assert kinds(engine.history("h", "i1")) == expected
    assert [kinds(chunk) for chunk in engine.history_chunks("h", "i1")] == [expected]
    # The new turn was appended after the old row, which stays in the store and is never served.
    with store.transaction() as tx:
        assert tx.history_length("h", "i1") == 7
        assert pb.HistoryEvent.FromString(tx.history("h", "i1")[3]).HasField("orchestratorCompleted")


def test_only_orchestrator_completed_events_are_left_out_of_a_stored_history() -> None:
    now = ManualClock().now()
    kept = [
        events.orchestrator_started(now),
        events.event_raised(now, "e", '"\\u007a"'),
        # A payload whose serialized form ends as an orchestratorCompleted event's does is still kept.
        events.event(now, eventRaised=pb.EventRaisedEvent(name="z", input=events.sv("z\x00"))),
    ]
    raw = [e.SerializeToString() for e in kept]
    completed = events.event(now, orchestratorCompleted=pb.OrchestratorCompletedEvent()).SerializeToString()
    assert raw[2].endswith(completed[-2:])
    assert events.without_orchestrator_completed([raw[0], completed, *raw[1:], completed]) == raw
