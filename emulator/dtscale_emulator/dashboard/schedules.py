"""Scheduled tasks for the dashboard: the list and the actions that fit each status, through the entity protocol.

The Durable Task SDKs keep each schedule in an entity ``@schedule@<schedule ID>`` whose state is a JSON object
in the .NET SDK's shape: PascalCase keys (older Python workers wrote snake_case ones, read too), the status as
the .NET enum's ordinal (0 Uninitialized, 1 Active, 2 Paused), times as ISO 8601 text, the interval as .NET
``TimeSpan`` text (``[-][d.]hh:mm:ss[.fffffff]``), and a cron expression beside it for cron schedules.

The list is an entity query; pause, resume and delete signal the entity with the operation the schedule entity
implements, then wait until its state shows the change. Only a worker with scheduled tasks enabled runs the
schedule entity, so without one the wait ends and the page says so.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from dtscale_emulator.dashboard.endpoint import EndpointClient
from dtscale_emulator.dashboard.views import fingerprint, iso

ENTITY_NAME = "schedule"
#: The dashboard's actions and the schedule entity's operations that carry them out.
OPERATIONS = {"pause": "pause_schedule", "resume": "resume_schedule", "delete": "delete"}
#: The stored status ordinals, in the .NET enum's order.
STATUSES = ("Uninitialized", "Active", "Paused")
#: What each status lets a person do; deleting is always possible.
ACTIONS = {"Active": ("pause", "delete"), "Paused": ("resume", "delete")}
#: How long an action waits for the schedule entity to apply it, and how often it looks.
OPERATION_TIMEOUT = 30.0
POLL_INTERVAL = 0.2
PAGE_SIZE = 100
_DONE = {"pause": "paused", "resume": "resumed", "delete": "deleted"}
_TIMESPAN = re.compile(r"^(-)?(?:(\d+)\.)?(\d+):(\d+):(\d+)(?:\.(\d{1,7}))?$")


def _first(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in data:
            return data[key]
    return None


def _status(value: Any) -> str:
    """A stored status: an ordinal, its digits or a name in any case; anything else reads as Uninitialized."""
    if isinstance(value, bool) or value is None:
        return "Uninitialized"
    if isinstance(value, str) and not value.strip().isdigit():
        return next((s for s in STATUSES if s.lower() == value.strip().lower()), "Uninitialized")
    number = int(value) if isinstance(value, (int, str)) else -1
    return STATUSES[number] if 0 <= number < len(STATUSES) else "Uninitialized"


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    text = str(value)
    parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def timespan(text: str) -> timedelta:
    """The interval of .NET ``TimeSpan`` text.

    Raises:
        ValueError: ``text`` is not of the form ``[-][d.]hh:mm:ss[.fffffff]``.
    """
    found = _TIMESPAN.match(text.strip())
    if found is None:
        raise ValueError(f"interval {text!r} is not a .NET TimeSpan ([-][d.]hh:mm:ss[.fffffff])")
    sign, days, hours, minutes, seconds, ticks = found.groups()
    value = timedelta(
        days=int(days or 0),
        hours=int(hours),
        minutes=int(minutes),
        seconds=int(seconds),
        microseconds=int((ticks or "0").ljust(7, "0")) / 10,  # .NET counts 100 ns ticks
    )
    return -value if sign else value


@dataclass(frozen=True)
class ScheduleRow:
    """One schedule as the Schedules page shows it."""

    schedule_id: str
    orchestration: str | None
    status: str
    interval: timedelta | None
    cron: str | None
    time_zone: str | None
    next_run_at: datetime | None
    last_run_at: datetime | None
    start_at: datetime | None
    end_at: datetime | None


def _interval(config: dict[str, Any]) -> timedelta | None:
    text = _first(config, "Interval", "interval")
    if isinstance(text, str):
        return timespan(text)
    seconds = config.get("interval_seconds")
    return timedelta(seconds=seconds) if seconds is not None else None


def schedule_row(state_text: str | None) -> ScheduleRow | None:
    """The schedule in a schedule entity's state, or ``None`` when it holds none (never created, or deleted).

    Raises:
        ValueError: the state is not JSON, or a time or interval in it cannot be read.
    """
    state = json.loads(state_text) if state_text else None
    config = _first(state, "ScheduleConfiguration", "schedule_configuration") if isinstance(state, dict) else None
    if not isinstance(state, dict) or not isinstance(config, dict):
        return None
    cron = _first(config, "CronExpression", "cron")
    return ScheduleRow(
        schedule_id=str(_first(config, "ScheduleId", "schedule_id") or ""),
        orchestration=_first(config, "OrchestrationName", "orchestration_name"),
        status=_status(_first(state, "Status", "status")),
        # A cron schedule also stores an interval: only its period, for readers that know no cron.
        interval=None if cron is not None else _interval(config),
        cron=cron,
        time_zone=_first(config, "TimeZone", "time_zone"),
        next_run_at=_time(_first(state, "NextRunAt", "next_run_at")),
        last_run_at=_time(_first(state, "LastRunAt", "last_run_at")),
        start_at=_time(_first(config, "StartAt", "start_at")),
        end_at=_time(_first(config, "EndAt", "end_at")),
    )


def schedule_json(s: ScheduleRow) -> dict[str, Any]:
    every = f"cron {s.cron}" + (f" ({s.time_zone})" if s.time_zone else "") if s.cron else None
    if every is None and s.interval is not None:
        every = f"every {s.interval.total_seconds():g} s"
    return {
        "id": s.schedule_id,
        "orchestration": s.orchestration,
        "status": s.status,
        "every": every or "",
        "next_run_at": iso(s.next_run_at) if s.status == "Active" else None,
        "last_run_at": iso(s.last_run_at),
        "start_at": iso(s.start_at),
        "end_at": iso(s.end_at),
        "actions": list(ACTIONS.get(s.status, ("delete",))),
    }


async def listing(client: EndpointClient, prefix: str | None) -> dict[str, Any]:
    """Every schedule whose ID starts with ``prefix``, by ID."""
    found: list[ScheduleRow] = []
    token: str | None = None
    while True:
        page, token = await client.query_entities(
            prefix=f"@{ENTITY_NAME}@{prefix or ''}", include_state=True, size=PAGE_SIZE, token=token
        )
        for entity in page:
            row = schedule_row(entity.serializedState.value if entity.HasField("serializedState") else None)
            if row is not None:
                found.append(row)
        if token is None:
            break
    items = [schedule_json(s) for s in sorted(found, key=lambda s: s.schedule_id)]
    return {"items": items, "digest": fingerprint(items)}


async def _read(client: EndpointClient, schedule_id: str) -> ScheduleRow | None:
    entity = await client.get_entity(f"@{ENTITY_NAME}@{schedule_id}", include_state=True)
    if entity is None or not entity.HasField("serializedState"):
        return None
    return schedule_row(entity.serializedState.value)


def _applied(action: str, now: ScheduleRow | None) -> bool:
    if action == "delete":
        return now is None or now.status == "Uninitialized"
    return now is not None and now.status == ("Paused" if action == "pause" else "Active")


async def act(client: EndpointClient, schedule_id: str, action: str) -> dict[str, Any]:
    """Pauses, resumes or deletes the schedule, once its entity has applied the operation.

    Raises:
        ValueError: no schedule ID, or an action other than pause, resume and delete.
        LookupError: there is no such schedule, its status does not allow the action, or the entity did not
            apply it within :data:`OPERATION_TIMEOUT` seconds.
    """
    if not schedule_id:
        raise ValueError("id is required (the schedule ID)")
    if action not in OPERATIONS:
        raise ValueError(f"schedule action must be pause, resume or delete, not {action!r}")
    current = await _read(client, schedule_id)
    if current is None:
        raise LookupError(f"there is no schedule {schedule_id!r} in task hub {client.hub!r}")
    if action not in ACTIONS.get(current.status, ("delete",)):
        raise LookupError(f"schedule {schedule_id!r} is {current.status.lower()}, so it cannot be {_DONE[action]}")
    await client.signal_entity(f"@{ENTITY_NAME}@{schedule_id}", OPERATIONS[action], None)
    timeout = OPERATION_TIMEOUT
    deadline = time.monotonic() + timeout
    while not _applied(action, await _read(client, schedule_id)):
        if time.monotonic() >= deadline:
            raise LookupError(
                f"the {action} of schedule {schedule_id!r} did not finish within {timeout:g} s: is a worker "
                "with scheduled tasks enabled connected?"
            )
        await asyncio.sleep(POLL_INTERVAL)
    return {"message": f"{_DONE[action]} schedule {schedule_id}"}
