"""Schedules as the dashboard reads and changes them: the SDK's wire format, and actions nothing runs or allows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from dtscale_emulator.dashboard import schedules, views
from dtscale_emulator.dashboard.endpoint import EndpointClient
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask import client, worker
from durabletask.scheduled import ScheduleCreationOptions, ScheduledTaskClient, transitions
from durabletask.scheduled.models import ScheduleConfiguration, ScheduleState
from durabletask.scheduled.schedule_entity import DELETE_OPERATION, ENTITY_NAME
from durabletask.scheduled.schedule_status import ScheduleStatus

T0 = datetime(2026, 3, 1, 6, 30, tzinfo=timezone.utc)


def act(address: str, schedule_id: str, action: str) -> dict[str, object]:
    async def run() -> dict[str, object]:
        c = EndpointClient(address, "default")
        try:
            return await schedules.act(c, schedule_id, action)
        finally:
            await c.close()

    return aio_loop.run(run())


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    """An emulator holding the active schedule "nightly", whose worker has gone: nothing runs the entity now."""
    server = EmulatorServer(port=0, in_memory=True).start()
    w = worker.TaskHubGrpcWorker(host_address=server.address)
    w.configure_scheduled_tasks()
    w.start()
    c = client.TaskHubGrpcClient(host_address=server.address)
    try:
        # Waits until the entity has applied the creation (it runs through the worker).
        ScheduledTaskClient(c).create_schedule(
            ScheduleCreationOptions(
                "nightly", "report", interval=timedelta(hours=24), start_at=datetime.now(timezone.utc) + timedelta(1)
            )
        )
    finally:
        c.close()
        w.stop()
    try:
        yield server.address
    finally:
        server.close()


def test_an_action_no_worker_runs_says_what_is_missing(address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedules, "OPERATION_TIMEOUT", 0.5)
    with pytest.raises(LookupError, match="is a worker with scheduled tasks enabled connected"):
        act(address, "nightly", "pause")
    with pytest.raises(ValueError, match="pause, resume or delete, not 'explode'"):
        act(address, "nightly", "explode")
    with pytest.raises(ValueError, match="id is required"):
        act(address, "", "pause")


def test_an_action_the_status_does_not_allow_or_a_missing_schedule_is_refused_at_once(address: str) -> None:
    with pytest.raises(LookupError, match="schedule 'nightly' is active, so it cannot be resumed"):
        act(address, "nightly", "resume")
    with pytest.raises(LookupError, match="there is no schedule 'weekly' in task hub 'default'"):
        act(address, "weekly", "pause")


def test_the_operations_are_the_schedule_entitys() -> None:
    assert schedules.ENTITY_NAME == ENTITY_NAME
    assert schedules.OPERATIONS == {
        "pause": transitions.PAUSE_SCHEDULE,
        "resume": transitions.RESUME_SCHEDULE,
        "delete": DELETE_OPERATION,
    }
    by_ordinal = sorted(ScheduleStatus, key=lambda s: s.to_dotnet_ordinal())
    assert tuple(s.value for s in by_ordinal) == schedules.STATUSES


def stored(options: ScheduleCreationOptions, status: ScheduleStatus, **times: datetime) -> ScheduleState:
    state = ScheduleState()
    state.schedule_configuration = ScheduleConfiguration.from_create_options(options)
    state.status = status
    state.schedule_created_at = T0
    state.last_run_at = times.get("last_run_at")
    state.next_run_at = times.get("next_run_at")
    return state


def expected(state: ScheduleState) -> dict[str, Any]:
    """What the Schedules page shows of a schedule, read with the SDK's own model of the stored state."""
    d = state.to_description()
    iso = views.iso
    every = f"cron {d.cron}" + (f" ({d.time_zone})" if d.time_zone else "") if d.cron else None
    if every is None and d.interval is not None:
        every = f"every {d.interval.total_seconds():g} s"
    return {
        "id": d.schedule_id,
        "orchestration": d.orchestration_name,
        "status": d.status.value,
        "every": every or "",
        "next_run_at": iso(d.next_run_at) if d.status == ScheduleStatus.ACTIVE else None,
        "last_run_at": iso(d.last_run_at),
        "start_at": iso(d.start_at),
        "end_at": iso(d.end_at),
        "actions": {"Active": ["pause", "delete"], "Paused": ["resume", "delete"]}[d.status.value],
    }


CASES = [
    stored(
        ScheduleCreationOptions("hourly", "report", interval=timedelta(hours=1, seconds=0.25), start_at=T0),
        ScheduleStatus.ACTIVE,
        last_run_at=T0 + timedelta(hours=3),
        next_run_at=T0 + timedelta(hours=4),
    ),
    stored(
        ScheduleCreationOptions(
            "bounded", "cleanup", interval=timedelta(days=2, minutes=5), start_at=T0, end_at=T0 + timedelta(days=30)
        ),
        ScheduleStatus.PAUSED,
        last_run_at=T0,
    ),
    stored(
        ScheduleCreationOptions("weekdays", "digest", cron="0 9 * * 1-5", time_zone="Europe/Paris"),
        ScheduleStatus.ACTIVE,
        next_run_at=T0 + timedelta(days=1),
    ),
]


@pytest.mark.parametrize("state", CASES, ids=lambda s: s.schedule_configuration.schedule_id)
def test_the_dashboard_reads_the_state_the_sdk_stores(state: ScheduleState) -> None:
    text = json.dumps(state.to_json())  # the schedule entity's state, as the worker stores it
    row = schedules.schedule_row(text)
    assert row is not None and schedules.schedule_json(row) == expected(state)


def test_the_snake_case_state_of_older_python_workers_reads_too() -> None:
    text = json.dumps(
        {
            "status": "Paused",
            "last_run_at": "2026-03-01T06:30:00Z",
            "schedule_configuration": {"schedule_id": "old", "orchestration_name": "report", "interval_seconds": 90},
        }
    )
    row = schedules.schedule_row(text)
    assert row is not None
    assert schedules.schedule_json(row) == expected(ScheduleState.from_json(json.loads(text)))
    assert schedules.schedule_row(json.dumps({"Status": 0, "ScheduleConfiguration": None})) is None  # deleted
