"""Turns an instance's history into a readable timeline: names, task IDs, offsets, durations, payload sizes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# Events that start something another event later finishes, keyed by the ID the finishing event refers to.
_OPENERS = {"TaskScheduledEvent", "SubOrchestrationInstanceCreatedEvent", "TimerCreatedEvent"}
_CLOSERS = {
    "TaskCompletedEvent": "task_scheduled_id",
    "TaskFailedEvent": "task_scheduled_id",
    "SubOrchestrationInstanceCompletedEvent": "task_scheduled_id",
    "SubOrchestrationInstanceFailedEvent": "task_scheduled_id",
    "TimerFiredEvent": "timer_id",
}
_PAYLOAD_FIELDS = ("input", "result")
#: How an externalized payload's token starts (``durabletask.payload.store.TOKEN_PREFIX``).
_TOKEN_PREFIX = "blob:v1:"


@dataclass(frozen=True)
class Row:
    event_id: int
    offset: float
    kind: str
    name: str
    task: str
    duration: float | None
    size: int | None
    detail: str


def _payload_size(event: Any) -> int | None:
    for field in _PAYLOAD_FIELDS:
        value = getattr(event, field, None)
        if isinstance(value, str):
            # A token's length says nothing of the payload's: the detail shows the token instead.
            return None if value.startswith(_TOKEN_PREFIX) else len(value.encode("utf-8"))
    return None


def _detail(event: Any) -> str:
    parts = []
    status = getattr(event, "orchestration_status", None)
    if status is not None:
        parts.append(f"status={status}")
    failure = getattr(event, "failure_details", None)
    if failure is not None:
        parts.append(f"{failure.error_type}: {failure.message}")
    for field in _PAYLOAD_FIELDS:
        value = getattr(event, field, None)
        if isinstance(value, str) and value.startswith(_TOKEN_PREFIX):
            parts.append(f"{field} externalized as {value} (--payload-dir DIR or --blob-connection-string CS shows it)")
    for field in ("reason", "fire_at", "instance_id"):
        value = getattr(event, field, None)
        if value:
            parts.append(f"{field}={value.isoformat() if isinstance(value, datetime) else value}")
    return " ".join(parts)


def timeline(events: Sequence[Any]) -> list[Row]:
    """One row per event; completions carry the name and duration of what they complete."""
    if not events:
        return []
    start = events[0].timestamp
    opened: dict[tuple[str, int], tuple[datetime, str]] = {}
    rows = []
    for event in events:
        kind = type(event).__name__
        name = getattr(event, "name", None) or ""
        task, duration = "", None
        if kind in _OPENERS:
            group = "timer" if kind == "TimerCreatedEvent" else "task"
            opened[(group, event.event_id)] = (event.timestamp, name)
            task = str(event.event_id)
        elif kind in _CLOSERS:
            ref = getattr(event, _CLOSERS[kind])
            group = "timer" if kind == "TimerFiredEvent" else "task"
            began = opened.get((group, ref))
            task = str(ref)
            if began is not None:
                duration = (event.timestamp - began[0]).total_seconds()
                name = name or began[1]
        rows.append(
            Row(
                event.event_id,
                (event.timestamp - start).total_seconds(),
                kind.removesuffix("Event"),
                name,
                task,
                duration,
                _payload_size(event),
                _detail(event),
            )
        )
    return rows
