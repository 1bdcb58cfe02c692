"""Scheduled tasks (``durabletask.scheduled``) for the dashboard: the list and the actions that fit each status.

Schedules are entities, so they are read and changed through the public protocol like everything else: the
list through the entity query, pause, resume and delete through the schedule's operation orchestration, which
needs a worker with scheduled tasks enabled (``configure_scheduled_tasks``). A worker that does not run it
leaves the action waiting, and the page says so when the wait ends.
"""

from __future__ import annotations

from typing import Any

from dtscale_emulator.dashboard.views import fingerprint, iso
from durabletask._client.async_client import AsyncTaskHubGrpcClient
from durabletask.scheduled import AsyncScheduledTaskClient, ScheduleDescription, ScheduleQuery, ScheduleStatus

#: How long an action waits for the schedule's operation orchestration to finish.
OPERATION_TIMEOUT = 30.0
#: What each status lets a person do; deleting is always possible.
ACTIONS = {
    ScheduleStatus.ACTIVE: ("pause", "delete"),
    ScheduleStatus.PAUSED: ("resume", "delete"),
}


def schedule_json(s: ScheduleDescription) -> dict[str, Any]:
    every = f"cron {s.cron}" + (f" ({s.time_zone})" if s.time_zone else "") if s.cron else None
    if every is None and s.interval is not None:
        every = f"every {s.interval.total_seconds():g} s"
    return {
        "id": s.schedule_id,
        "orchestration": s.orchestration_name,
        "status": s.status.value,
        "every": every or "",
        "next_run_at": iso(s.next_run_at) if s.status == ScheduleStatus.ACTIVE else None,
        "last_run_at": iso(s.last_run_at),
        "start_at": iso(s.start_at),
        "end_at": iso(s.end_at),
        "actions": list(ACTIONS.get(s.status, ("delete",))),
    }


async def listing(client: AsyncTaskHubGrpcClient, prefix: str | None) -> dict[str, Any]:
    found = await AsyncScheduledTaskClient(client).list_schedules(ScheduleQuery(schedule_id_prefix=prefix or None))
    items = [schedule_json(s) for s in sorted(found, key=lambda s: s.schedule_id)]
    return {"items": items, "digest": fingerprint(items)}


async def act(client: AsyncTaskHubGrpcClient, schedule_id: str, action: str) -> dict[str, Any]:
    """Pauses, resumes or deletes the schedule; the schedule's own refusal (a wrong status) propagates."""
    if not schedule_id:
        raise ValueError("id is required (the schedule ID)")
    handle = AsyncScheduledTaskClient(client, operation_timeout=OPERATION_TIMEOUT).get_schedule_client(schedule_id)
    operations = {"pause": handle.pause, "resume": handle.resume, "delete": handle.delete}
    if action not in operations:
        raise ValueError(f"schedule action must be pause, resume or delete, not {action!r}")
    try:
        await operations[action]()
    except TimeoutError:
        raise LookupError(
            f"the {action} of schedule {schedule_id!r} did not finish within {OPERATION_TIMEOUT:g} s: is a worker "
            "with scheduled tasks enabled connected?"
        ) from None
    done = {"pause": "paused", "resume": "resumed", "delete": "deleted"}[action]
    return {"message": f"{done} schedule {schedule_id}"}
