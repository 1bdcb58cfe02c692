"""Time skipping on the store alone: the clock jumps to the next due time only when nothing is leased or ready."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from dtscale_emulator.dispatch.time_skipping import TimeSkipper, skipping_clock
from dtscale_emulator.engine import events
from dtscale_emulator.ops.clock import ManualClock, SystemClock
from dtscale_emulator.storage import EntityRecord, InstanceRecord, SqliteBackend

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
RUNNING = 0


def at(delta: timedelta) -> int:
    return events.to_micros(T0 + delta)


@pytest.fixture
def store() -> Iterator[SqliteBackend]:
    backend = SqliteBackend(None)
    yield backend
    backend.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def instance(store: SqliteBackend, iid: str, hub: str = "h", **lease: object) -> None:
    record = InstanceRecord(hub, iid, "e", "Orch", RUNNING, at(timedelta()), at(timedelta()), **lease)  # type: ignore[arg-type]
    with store.transaction() as tx:
        tx.ensure_hub(hub)
        tx.put_instance(record)


def timer(store: SqliteBackend, iid: str, due: timedelta, hub: str = "h") -> None:
    with store.transaction() as tx:
        tx.add_message(hub, iid, b"timerFired", at(due))


def test_an_idle_store_jumps_to_its_earliest_timer_across_hubs(store: SqliteBackend, clock: ManualClock) -> None:
    instance(store, "a")
    instance(store, "b", hub="other")
    timer(store, "a", timedelta(days=30))
    timer(store, "b", timedelta(days=2), hub="other")
    skipper = TimeSkipper(store, clock, ["h", "other"])
    assert skipper.skip_if_idle() == T0 + timedelta(days=2)
    assert clock.now() == T0 + timedelta(days=2)
    # The timer that is due now is ready work: no second jump until something takes it.
    assert skipper.skip_if_idle() is None
    with store.transaction() as tx:
        tx.delete_instance_messages("other", "b")
    assert skipper.skip_if_idle() == T0 + timedelta(days=30)
    assert skipper.jumps == 2


def test_nothing_due_leaves_the_clock_alone(store: SqliteBackend, clock: ManualClock) -> None:
    instance(store, "a")
    assert TimeSkipper(store, clock, ["h"]).skip_if_idle() is None
    assert clock.now() == T0


def test_a_leased_instance_blocks_the_jump_until_its_lease_ends(store: SqliteBackend, clock: ManualClock) -> None:
    instance(store, "a", lock_token="tok", lock_expires=at(timedelta(minutes=5)))
    timer(store, "a", timedelta(minutes=10))  # a 10-minute timer racing the turn that is out
    skipper = TimeSkipper(store, clock, ["h"])
    assert skipper.skip_if_idle() is None
    with store.transaction() as tx:
        tx.lock_instance("h", "a", None, None)
    assert skipper.skip_if_idle() == T0 + timedelta(minutes=10)


def test_a_queued_or_running_activity_blocks_the_jump(store: SqliteBackend, clock: ManualClock) -> None:
    instance(store, "a")
    timer(store, "a", timedelta(minutes=10))
    with store.transaction() as tx:
        activity = tx.add_activity("h", "a", 1, "slow", None, b"request")
    skipper = TimeSkipper(store, clock, ["h"])
    assert skipper.skip_if_idle() is None  # queued
    with store.transaction() as tx:
        tx.lock_activity(activity, "tok", at(timedelta(minutes=5)))
    assert skipper.skip_if_idle() is None  # leased: a worker runs it
    with store.transaction() as tx:
        tx.delete_activity(activity)
    assert skipper.skip_if_idle() == T0 + timedelta(minutes=10)


def test_ready_orchestration_and_entity_work_block_the_jump(store: SqliteBackend, clock: ManualClock) -> None:
    instance(store, "a")
    timer(store, "a", timedelta(hours=1))
    with store.transaction() as tx:
        tx.add_message("h", "a", b"eventRaised", at(timedelta()))
    skipper = TimeSkipper(store, clock, ["h"])
    assert skipper.skip_if_idle() is None
    with store.transaction() as tx:
        tx.delete_instance_messages("h", "a")
        tx.add_message("h", "a", b"timerFired", at(timedelta(hours=1)))
        tx.put_entity(EntityRecord("h", "@counter@x", None, at(timedelta())))
        tx.add_entity_operation("h", "@counter@x", b"signal", at(timedelta()), None)
    assert skipper.skip_if_idle() is None
    with store.transaction() as tx:
        tx.delete_instance_messages("h", "@counter@x")
    assert skipper.skip_if_idle() == T0 + timedelta(hours=1)


def test_no_jump_while_paused(store: SqliteBackend, clock: ManualClock) -> None:
    instance(store, "a")
    timer(store, "a", timedelta(hours=1))
    skipper = TimeSkipper(store, clock, ["h"])
    with skipper.paused():
        assert skipper.skip_if_idle() is None
    assert skipper.skip_if_idle() == T0 + timedelta(hours=1)


def test_hubs_are_learned_from_changes_and_ended_leases(store: SqliteBackend, clock: ManualClock) -> None:
    instance(store, "a", hub="late")
    timer(store, "a", timedelta(hours=1), hub="late")
    skipper = TimeSkipper(store, clock)
    assert skipper.skip_if_idle() is None  # no hub known yet
    skipper.work_changed("late")
    assert skipper.skip_if_idle() == T0 + timedelta(hours=1)
    with store.transaction() as tx:
        tx.delete_instance_messages("late", "a")  # the fired timer, taken
    instance(store, "b", hub="later")
    timer(store, "b", timedelta(hours=2), hub="later")
    skipper.lease_ended("later")
    assert skipper.skip_if_idle() == T0 + timedelta(hours=2)


def test_the_loop_jumps_on_a_notification_and_announces_the_new_time(store: SqliteBackend, clock: ManualClock) -> None:
    woke: list[datetime] = []
    announced = threading.Event()

    def announce() -> None:
        woke.append(clock.now())
        announced.set()

    clock.subscribe(announce)
    instance(store, "a")
    skipper = TimeSkipper(store, clock, ["h"])
    skipper.start()
    try:
        timer(store, "a", timedelta(days=3))
        skipper.work_changed("h")
        assert announced.wait(10)
        assert woke == [T0 + timedelta(days=3)]
    finally:
        skipper.stop()


def test_time_skipping_needs_a_clock_it_can_move() -> None:
    given = ManualClock(T0)
    assert skipping_clock(given) is given
    assert isinstance(skipping_clock(None), ManualClock)
    with pytest.raises(ValueError, match="pass a ManualClock or no clock"):
        skipping_clock(SystemClock())
