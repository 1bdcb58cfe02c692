"""The running bounded activities of an instance, read from its history entries: timeouts and last heartbeat.

A bounded activity call (``call_activity`` with a timeout or a cancellation type) leaves three marks in the
history, all over public Durable Task primitives: each attempt is a ``TaskScheduled`` event with the tag
:data:`CONTROL_TAG` (JSON: its attempt number and timeouts in seconds), the attempt's start and its heartbeats are
external events named :data:`CONTROL_EVENT` raised at the orchestration (JSON: ``{"task", "kind", "details"}``,
the details being JSON text), and an attempt asked to stop is a ``cancel`` signal to the execution's
:data:`CONTROL_ENTITY` with the task ID as input. The dashboard imports no SDK, so it reads these marks here; a
test builds them with the SDK and reads them back with this module, so a change of format breaks a test.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dtscale_emulator.dashboard.models import HistoryEntry
from dtscale_emulator.dashboard.views import iso

#: The tag of a scheduled attempt holding its settings (attempt, timeouts).
CONTROL_TAG = "dtscale.activity"
#: The name of the external events an attempt raises at its orchestration: its start and its heartbeats.
CONTROL_EVENT = "dtscale.activity"
#: The entity (one per execution) an orchestration signals to ask an attempt to stop.
CONTROL_ENTITY = "dtscale.activities"


@dataclass
class RunningActivity:
    """One attempt of a bounded activity call that has not completed, failed or been asked to stop."""

    task_id: int
    name: str
    attempt: int
    timeouts: dict[str, float]
    scheduled_at: datetime
    started_at: datetime | None = None
    last_heartbeat_at: datetime | None = None
    #: The last heartbeat's details as the worker sent them (JSON text), ``None`` before any.
    last_heartbeat_details: str | None = field(default=None)


def _json(text: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _settings(entry: HistoryEntry) -> tuple[int, dict[str, float]] | None:
    """The attempt number and timeouts of a scheduled task with the control tag; ``None`` for any other task."""
    tags = entry.fields.get("tags")
    body = _json(tags.get(CONTROL_TAG)) if isinstance(tags, dict) else None
    if not isinstance(body, dict):
        return None
    timeouts = body.get("timeouts")
    try:
        attempt = int(body.get("attempt", 1))
        found = {str(k): float(v) for k, v in timeouts.items()} if isinstance(timeouts, dict) else {}
    except (TypeError, ValueError):
        return None
    return attempt, found


def _is_cancel(entry: HistoryEntry) -> bool:
    target = entry.fields.get("target_instance_id")
    return (
        entry.fields.get("operation") == "cancel"
        and isinstance(target, str)
        and target.lower().startswith(f"@{CONTROL_ENTITY}@")
    )


def _report(running: dict[int, RunningActivity], entry: HistoryEntry) -> None:
    body = _json(entry.fields.get("input"))
    if not isinstance(body, dict) or not isinstance(body.get("task"), int):
        return
    attempt = running.get(body["task"])
    if attempt is None:
        return
    if attempt.started_at is None:
        attempt.started_at = entry.timestamp
    if body.get("kind") == "beat":
        attempt.last_heartbeat_at = entry.timestamp
        if isinstance(body.get("details"), str):
            attempt.last_heartbeat_details = body["details"]


def running_activities(entries: Sequence[HistoryEntry]) -> list[RunningActivity]:
    """The bounded attempts still running at the end of ``entries`` (those of the last execution), by task ID."""
    running: dict[int, RunningActivity] = {}
    for entry in entries:
        kind = entry.kind
        if kind == "ExecutionStarted":
            running.clear()  # a new execution numbers its tasks anew
        elif kind == "TaskScheduled":
            settings = _settings(entry)
            if settings is not None:
                attempt, timeouts = settings
                running[entry.event_id] = RunningActivity(
                    entry.event_id, entry.name or "", attempt, timeouts, entry.timestamp
                )
        elif kind in ("TaskCompleted", "TaskFailed"):
            running.pop(entry.fields.get("task_scheduled_id", -1), None)
        elif kind == "EntityOperationSignaled" and _is_cancel(entry):
            task_id = _json(entry.fields.get("input"))
            if isinstance(task_id, int):
                running.pop(task_id, None)
        elif kind == "EventRaised" and str(entry.name or "").casefold() == CONTROL_EVENT:
            _report(running, entry)
    return sorted(running.values(), key=lambda a: a.task_id)


#: The statuses in which an instance's activities can still be running (it has not ended).
LIVE_STATUSES = frozenset({"RUNNING", "SUSPENDED"})


def activities_json(status: str, entries: Sequence[HistoryEntry]) -> list[dict[str, Any]]:
    """The instance page's "Running activities": none once the instance has ended (its attempts are told to stop)."""
    if status not in LIVE_STATUSES:
        return []
    return [
        {
            "task_id": a.task_id,
            "name": a.name,
            "attempt": a.attempt,
            "timeouts": a.timeouts,
            "scheduled_at": iso(a.scheduled_at),
            "started_at": iso(a.started_at),
            "last_heartbeat_at": iso(a.last_heartbeat_at),
            "last_heartbeat_details": a.last_heartbeat_details,
        }
        for a in running_activities(entries)
    ]
