"""Scheduled tasks end to end on the emulator, with its clock moved by hand instead of waiting."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask import client
from durabletask.history import ExecutionStartedEvent
from durabletask.scheduled import (
    AsyncScheduledTaskClient,
    ScheduleCreationOptions,
    ScheduleInvalidTransitionError,
    ScheduleNotFoundError,
    ScheduleQuery,
    ScheduleStatus,
    ScheduleUpdateOptions,
)

from .scheduled_support import START, ScheduleHub, next_run_changes, run_id, runs_of, schedule_hub, wait_for

MINUTE = timedelta(minutes=1)


@pytest.fixture(scope="module")
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(scope="module")
def server(clock: ManualClock) -> Iterator[EmulatorServer]:
    srv = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True, clock=clock)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def hub(server: EmulatorServer, clock: ManualClock) -> Iterator[ScheduleHub]:
    with schedule_hub(server, clock) as made:
        made.start_worker()
        yield made


def started(c: client.TaskHubGrpcClient, instance_id: str) -> client.OrchestrationState:
    wait_for(lambda: c.get_orchestration_state(instance_id, fetch_payloads=False), f"run {instance_id} to start")
    state = c.wait_for_orchestration_completion(instance_id, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    return state


def test_a_schedule_runs_each_due_time_with_a_run_id_from_the_due_time(hub: ScheduleHub) -> None:
    schedules, c = hub.schedules(), hub.client()
    created = hub.clock.now()
    schedules.create_schedule(ScheduleCreationOptions("nightly", "report", MINUTE, orchestration_input={"n": 1}))
    first = next_run_changes(schedules, "nightly", None)
    assert first.status == ScheduleStatus.ACTIVE
    assert first.next_run_at == created + MINUTE  # aligned to the creation time, one interval later
    assert first.interval == MINUTE and first.orchestration_input == {"n": 1}

    hub.clock.advance(MINUTE)
    state = started(c, run_id("nightly", created + MINUTE))
    assert state.serialized_output == '{"n":1}' or state.serialized_output == '{"n": 1}'
    second = next_run_changes(schedules, "nightly", first.next_run_at)
    assert second.last_run_at == created + MINUTE and second.next_run_at == created + 2 * MINUTE

    hub.clock.advance(MINUTE)
    started(c, run_id("nightly", created + 2 * MINUTE))
    next_run_changes(schedules, "nightly", second.next_run_at)
    assert runs_of(c, "nightly") == [run_id("nightly", created + MINUTE), run_id("nightly", created + 2 * MINUTE)]


def test_runs_missed_by_a_jump_in_time_start_once_for_the_oldest_due_time(hub: ScheduleHub) -> None:
    # As in Microsoft's SDK: a late wake-up starts the run it was armed for, then skips to the next due time.
    schedules, c = hub.schedules(), hub.client()
    created = hub.clock.now()
    schedules.create_schedule(ScheduleCreationOptions("jump", "report", MINUTE))
    first = next_run_changes(schedules, "jump", None)
    hub.clock.advance(MINUTE * 3.5)
    started(c, run_id("jump", created + MINUTE))
    after = next_run_changes(schedules, "jump", first.next_run_at)
    assert after.next_run_at == created + 4 * MINUTE
    assert runs_of(c, "jump") == [run_id("jump", created + MINUTE)]


def test_after_a_stretch_without_workers_the_oldest_due_run_starts_once(
    server: EmulatorServer, clock: ManualClock
) -> None:
    with schedule_hub(server, clock) as hub:
        first_worker = hub.start_worker()
        schedules, c = hub.schedules(), hub.client()
        created = hub.clock.now()
        schedules.create_schedule(ScheduleCreationOptions("idle", "report", MINUTE))
        next_run_changes(schedules, "idle", None)
        first_worker.stop()
        hub.clock.advance(MINUTE * 5.5)  # five due times pass with no worker connected
        hub.start_worker()
        started(c, run_id("idle", created + MINUTE))
        after = next_run_changes(schedules, "idle", created + MINUTE)
        assert after.next_run_at == created + 6 * MINUTE
        assert runs_of(c, "idle") == [run_id("idle", created + MINUTE)]


def test_two_workers_with_scheduled_tasks_start_each_due_run_once(server: EmulatorServer, clock: ManualClock) -> None:
    with schedule_hub(server, clock) as hub:
        hub.start_worker()
        hub.start_worker()
        schedules, c = hub.schedules(), hub.client()
        created = hub.clock.now()
        schedules.create_schedule(ScheduleCreationOptions("pair", "report", MINUTE))
        seen = next_run_changes(schedules, "pair", None)
        for k in range(1, 5):
            hub.clock.advance(MINUTE)
            started(c, run_id("pair", created + k * MINUTE))
            seen = next_run_changes(schedules, "pair", seen.next_run_at)
        assert runs_of(c, "pair") == [run_id("pair", created + k * MINUTE) for k in range(1, 5)]
        for k in range(1, 5):
            history = c.get_orchestration_history(run_id("pair", created + k * MINUTE))
            assert sum(isinstance(e, ExecutionStartedEvent) for e in history) == 1


def test_pause_skips_the_runs_due_meanwhile_and_resume_goes_on_from_the_next_due_time(hub: ScheduleHub) -> None:
    schedules, c = hub.schedules(), hub.client()
    created = hub.clock.now()
    handle = schedules.create_schedule(ScheduleCreationOptions("op", "report", MINUTE))
    next_run_changes(schedules, "op", None)
    handle.pause()
    paused = schedules.get_schedule("op")
    assert paused is not None and paused.status == ScheduleStatus.PAUSED and paused.next_run_at is None
    hub.clock.advance(MINUTE * 2.5)
    handle.resume()
    resumed = next_run_changes(schedules, "op", None)
    assert resumed.status == ScheduleStatus.ACTIVE and resumed.next_run_at == created + 3 * MINUTE
    hub.clock.advance(MINUTE)
    started(c, run_id("op", created + 3 * MINUTE))
    assert runs_of(c, "op") == [run_id("op", created + 3 * MINUTE)]


def test_refused_transitions_raise_what_microsofts_client_raises_and_name_the_transition(hub: ScheduleHub) -> None:
    schedules = hub.schedules()
    handle = schedules.create_schedule(ScheduleCreationOptions("t", "report", MINUTE))
    handle.pause()
    with pytest.raises(RuntimeError, match="'pause_schedule' cannot transition from 'Paused' to 'Paused'") as info:
        handle.pause()
    assert isinstance(info.value, ScheduleInvalidTransitionError)
    assert info.value.from_status == ScheduleStatus.PAUSED and info.value.operation_name == "pause_schedule"
    handle.resume()
    with pytest.raises(RuntimeError, match="resume_schedule"):
        handle.resume()


def test_an_unknown_schedule(hub: ScheduleHub) -> None:
    schedules = hub.schedules()
    assert schedules.get_schedule("nope") is None
    with pytest.raises(ScheduleNotFoundError, match="'nope' was not found"):
        schedules.get_schedule_client("nope").describe()
    with pytest.raises(RuntimeError, match="'pause_schedule' schedule 'nope'") as info:
        schedules.get_schedule_client("nope").pause()
    assert isinstance(info.value, ScheduleNotFoundError)
    with pytest.raises(RuntimeError, match="update_schedule"):
        schedules.get_schedule_client("nope").update(ScheduleUpdateOptions(interval=MINUTE))


def test_bad_configurations_are_refused_naming_the_field(hub: ScheduleHub) -> None:
    with pytest.raises(ValueError, match="interval must be positive"):
        ScheduleCreationOptions("b", "report", timedelta(0))
    with pytest.raises(ValueError, match="interval must be positive"):
        ScheduleCreationOptions("b", "report", -MINUTE)
    with pytest.raises(ValueError, match="interval must be at least 1 second"):
        ScheduleUpdateOptions(interval=timedelta(milliseconds=10))
    with pytest.raises(ValueError, match="schedule_id cannot be empty"):
        ScheduleCreationOptions("", "report", MINUTE)
    now = hub.clock.now()
    options = ScheduleCreationOptions("b", "report", MINUTE, start_at=now + MINUTE, end_at=now)
    with pytest.raises(RuntimeError, match="start_at cannot be later than end_at"):
        hub.schedules().create_schedule(options)
    assert hub.schedules().get_schedule("b") is None  # the refused creation left nothing behind


def test_update_moves_the_next_run_and_keeps_the_status(hub: ScheduleHub) -> None:
    schedules = hub.schedules()
    created = hub.clock.now()
    handle = schedules.create_schedule(ScheduleCreationOptions("u", "report", MINUTE))
    first = next_run_changes(schedules, "u", None)
    handle.update(ScheduleUpdateOptions(interval=MINUTE * 5, orchestration_input="v2"))
    updated = next_run_changes(schedules, "u", first.next_run_at)
    assert updated.next_run_at == created + 5 * MINUTE
    assert updated.interval == MINUTE * 5 and updated.orchestration_input == "v2"
    assert updated.status == ScheduleStatus.ACTIVE and updated.execution_token != first.execution_token
    handle.pause()
    handle.update(ScheduleUpdateOptions(orchestration_name="other"))
    paused = schedules.get_schedule("u")
    assert paused is not None and paused.status == ScheduleStatus.PAUSED and paused.orchestration_name == "other"


def test_delete_removes_the_schedule_and_its_pending_wake_up_starts_nothing(hub: ScheduleHub) -> None:
    schedules, c = hub.schedules(), hub.client()
    created = hub.clock.now()
    handle = schedules.create_schedule(ScheduleCreationOptions("d", "report", MINUTE))
    next_run_changes(schedules, "d", None)
    handle.delete()
    assert schedules.get_schedule("d") is None
    hub.clock.advance(MINUTE)
    # A later schedule's run proves the worker went past the deleted schedule's wake-up.
    schedules.create_schedule(ScheduleCreationOptions("d2", "report", MINUTE, start_immediately_if_late=True))
    started(c, run_id("d2", hub.clock.now()))
    assert c.get_orchestration_state(run_id("d", created + MINUTE)) is None
    assert schedules.get_schedule("d") is None


def test_a_schedule_past_its_end_deletes_itself(hub: ScheduleHub) -> None:
    schedules, c = hub.schedules(), hub.client()
    created = hub.clock.now()
    options = ScheduleCreationOptions("e", "report", MINUTE, end_at=created + MINUTE * 1.5)
    schedules.create_schedule(options)
    next_run_changes(schedules, "e", None)
    hub.clock.advance(MINUTE)
    started(c, run_id("e", created + MINUTE))
    hub.clock.advance(MINUTE)
    wait_for(lambda: schedules.get_schedule("e") is None, "the ended schedule to delete itself")
    assert runs_of(c, "e") == [run_id("e", created + MINUTE)]


def test_start_immediately_if_late_runs_once_at_once_then_aligns_to_the_start(hub: ScheduleHub) -> None:
    schedules, c = hub.schedules(), hub.client()
    now = hub.clock.now()
    start = now - MINUTE * 2.5
    options = ScheduleCreationOptions("late", "report", MINUTE, start_at=start, start_immediately_if_late=True)
    schedules.create_schedule(options)
    started(c, run_id("late", now))
    after = next_run_changes(schedules, "late", None)
    assert after.last_run_at == now and after.next_run_at == start + 3 * MINUTE
    # Without the flag, a late schedule waits for its next aligned time.
    schedules.create_schedule(ScheduleCreationOptions("ontime", "report", MINUTE, start_at=start))
    assert next_run_changes(schedules, "ontime", None).next_run_at == start + 3 * MINUTE
    assert runs_of(c, "ontime") == []


def test_a_future_start_is_the_first_run(hub: ScheduleHub) -> None:
    schedules, c = hub.schedules(), hub.client()
    start = hub.clock.now() + MINUTE * 10
    schedules.create_schedule(ScheduleCreationOptions("f", "report", MINUTE * 60, start_at=start))
    assert next_run_changes(schedules, "f", None).next_run_at == start
    hub.clock.advance(MINUTE * 10)
    started(c, run_id("f", start))


def test_list_filters_by_prefix_status_and_creation_time_across_pages(hub: ScheduleHub) -> None:
    schedules = hub.schedules()
    before = hub.clock.now()
    for name in ("a1", "a2", "a3", "b1"):
        schedules.create_schedule(ScheduleCreationOptions(f"list-{name}", "report", MINUTE))
    schedules.get_schedule_client("list-a2").pause()

    def ids(query: ScheduleQuery | None = None) -> list[str]:
        return sorted(d.schedule_id for d in schedules.list_schedules(query))

    assert ids() == ["list-a1", "list-a2", "list-a3", "list-b1"]
    assert ids(ScheduleQuery(schedule_id_prefix="list-a", page_size=1)) == ["list-a1", "list-a2", "list-a3"]
    assert ids(ScheduleQuery(status=ScheduleStatus.PAUSED)) == ["list-a2"]
    assert ids(ScheduleQuery(status=ScheduleStatus.ACTIVE, schedule_id_prefix="list-a")) == ["list-a1", "list-a3"]
    assert ids(ScheduleQuery(created_from=before - MINUTE, created_to=before + MINUTE)) == ids()
    assert ids(ScheduleQuery(created_from=before)) == []  # the bounds are exclusive
    assert ids(ScheduleQuery(created_to=before.replace(tzinfo=None))) == []  # naive bounds are UTC


async def test_the_async_client(hub: ScheduleHub) -> None:
    async_client = hub.async_client()
    try:
        schedules = AsyncScheduledTaskClient(async_client, operation_timeout=30)
        handle = await schedules.create_schedule(ScheduleCreationOptions("async", "report", MINUTE))
        await handle.pause()
        found = await schedules.get_schedule("async")
        assert found is not None and found.status == ScheduleStatus.PAUSED
        with pytest.raises(ScheduleInvalidTransitionError):
            await handle.pause()
        assert [d.schedule_id for d in await schedules.list_schedules(ScheduleQuery(schedule_id_prefix="as"))] == [
            "async"
        ]
        await handle.delete()
        assert await schedules.get_schedule("async") is None
        with pytest.raises(ScheduleNotFoundError):
            await handle.describe()
    finally:
        await async_client.close()


def test_creating_a_paused_schedule_again_makes_it_active(hub: ScheduleHub) -> None:
    # The transition table allows Paused -> Active for create; the schedule runs again from the new configuration.
    schedules, c = hub.schedules(), hub.client()
    handle = schedules.create_schedule(ScheduleCreationOptions("re", "report", MINUTE))
    handle.pause()
    now = hub.clock.now()
    schedules.create_schedule(ScheduleCreationOptions("re", "report", MINUTE * 2, start_immediately_if_late=True))
    again = next_run_changes(schedules, "re", None)
    assert again.status == ScheduleStatus.ACTIVE and again.interval == MINUTE * 2
    hub.clock.advance(MINUTE * 2)
    started(c, run_id("re", again.next_run_at or now))
