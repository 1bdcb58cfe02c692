"""The engine without a dispatcher: the changes it reports to its subscriber, and session marks it spends."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from datetime import timedelta

import pytest

from dtscale_emulator.dispatch.sessions import SessionTable
from dtscale_emulator.engine.changes import ChangeFeed
from dtscale_emulator.engine.delivery import StartOptions
from dtscale_emulator.engine.entities import Entities
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.protocol import StringValue, pb
from dtscale_emulator.storage import NameFilter, SqliteBackend
from durabletask._protocol_extensions import INCLUDE_PAST_EVENTS

RUNNING = pb.ORCHESTRATION_STATUS_RUNNING


class Recorder:
    """A subscriber that keeps what it was told, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[object, ...]] = []

    def work_changed(
        self,
        hub: str,
        kinds: tuple[str, ...] | None = None,
        names: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.seen.append(("work", hub, kinds, None if names is None else dict(names)))

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        self.seen.append(("instance", hub, instance_id, status))

    def take(self) -> list[tuple[object, ...]]:
        seen, self.seen = self.seen, []
        return seen


@pytest.fixture
def store() -> Iterator[SqliteBackend]:
    backend = SqliteBackend(None)
    yield backend
    backend.close()


def test_engine_reports_each_change_to_its_subscriber(store: SqliteBackend) -> None:
    clock = ManualClock()
    recorder = Recorder()
    engine = Engine(store, clock, recorder)
    engine.create("h", StartOptions("i1", "Orch"))
    assert recorder.take() == [
        ("work", "h", ("orchestration",), {"orchestration": frozenset({"Orch"})}),
        ("instance", "h", "i1", None),
    ]

    found, _ = engine.lease_orchestrations("h", NameFilter(), ["t1"], clock.now() + timedelta(seconds=30))
    assert recorder.take() == []  # a lease changes nothing anyone waits for
    schedule = pb.OrchestratorAction(id=0, scheduleTask=pb.ScheduleTaskAction(name="Act"))
    engine.complete_orchestration("h", found[0], "t1", pb.OrchestratorResponse(actions=[schedule]))
    assert recorder.take() == [
        ("work", "h", ("activity",), {"orchestration": frozenset({"Orch"}), "activity": frozenset({"Act"})}),
        ("instance", "h", "i1", RUNNING),
    ]

    activities, _ = engine.lease_activities("h", NameFilter(), ["t2"], clock.now() + timedelta(seconds=30))
    result = pb.ActivityResponse(result=StringValue(value='"done"'))
    engine.complete_activity("h", activities[0].activity_id, "t2", result)
    assert recorder.take() == [("work", "h", ("orchestration",), {"orchestration": frozenset({"Orch"})})]

    engine.raise_event("h", "i1", "Go", None)
    assert recorder.take() == [("work", "h", ("orchestration",), {"orchestration": frozenset({"Orch"})})]
    engine.terminate("h", "i1", "stop", recursive=False)
    assert recorder.take() == [
        ("work", "h", ("orchestration",), {"orchestration": frozenset({"Orch"})}),
        ("instance", "h", None, None),
    ]


def test_a_raised_event_for_an_instance_not_started_yet_is_timed_work(store: SqliteBackend) -> None:
    clock = ManualClock()
    recorder = Recorder()
    engine = Engine(store, clock, recorder)
    engine.create("h", StartOptions("later", "Orch", scheduled_start=clock.now() + timedelta(hours=1)))
    recorder.take()
    engine.raise_event("h", "later", "Go", None)
    assert recorder.take() == [("work", "h", None, None)]  # seen only at the scheduled start


def test_a_feed_passes_changes_to_every_subscriber(store: SqliteBackend) -> None:
    feed = ChangeFeed()
    first, second = Recorder(), Recorder()
    engine = Engine(store, ManualClock(), feed)
    entities = Entities(store, engine.clock, feed)
    feed.subscribe(first)
    feed.subscribe(second)
    entities.signal("h", "@counter@a", "add", "1", "r1", None)
    assert first.take() == second.take() == [("work", "h", ("entity",), None)]
    entities.signal("h", "@counter@a", "add", "1", "r2", engine.clock.now() + timedelta(minutes=5))
    assert first.take() == second.take() == [("work", "h", None, None)]  # a scheduled signal is timed work


def test_an_engine_without_a_subscriber_still_works(store: SqliteBackend) -> None:
    engine = Engine(store, ManualClock())
    engine.create("h", StartOptions("i1", "Orch"))
    assert engine.get("h", "i1") is not None


def test_a_session_mark_survives_a_lease_that_fails(store: SqliteBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ManualClock()
    engine = Engine(store, clock)
    engine.create("h", StartOptions("i1", "Orch"))
    expires = clock.now() + timedelta(seconds=30)
    table = SessionTable()
    stream = table.view(1, keeps_sessions=True)
    (first,), _ = engine.lease_orchestrations("h", NameFilter(), ["t1"], expires, stream)
    mark = engine.complete_orchestration("h", first, "t1", pb.OrchestratorResponse())
    assert mark is not None
    table.keep(1, "h", "i1", mark)
    engine.raise_event("h", "i1", "Go", None)

    def broken(*args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(type(store._tx), "lock_instance", broken)
        with pytest.raises(sqlite3.OperationalError):
            engine.lease_orchestrations("h", NameFilter(), ["t2"], expires, stream)
    assert len(table) == 1  # the lease was never stored, so the stream still holds what it saw
    (again,), _ = engine.lease_orchestrations("h", NameFilter(), ["t3"], expires, stream)
    assert not again.request.pastEvents and again.request.properties[INCLUDE_PAST_EVENTS].bool_value is False
    assert len(table) == 0  # spent by the lease that was stored
