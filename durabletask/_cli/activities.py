"""The running bounded activities of an instance, read from its history: timeouts and last heartbeat of each."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from durabletask import history as h
from durabletask._replay.activity_control import CONTROL_EVENT, CONTROL_TAG, AttemptSettings


@dataclass
class RunningAttempt:
    """An attempt of a bounded call that has not completed, failed or been asked to stop."""

    task_id: int
    name: str
    attempt: int
    timeouts: dict[str, float]
    scheduled_at: datetime
    started_at: datetime | None = None
    last_heartbeat_at: datetime | None = None
    last_heartbeat_details: Any = field(default=None)


def running_attempts(events: Sequence[h.HistoryEvent]) -> list[RunningAttempt]:
    """The attempts still running at the end of ``events`` (those of the last execution)."""
    running: dict[int, RunningAttempt] = {}
    for event in events:
        if isinstance(event, h.ExecutionStartedEvent):
            running.clear()  # a new execution numbers its tasks anew
        elif isinstance(event, h.TaskScheduledEvent) and event.tags and CONTROL_TAG in event.tags:
            settings = AttemptSettings.from_tag(event.tags[CONTROL_TAG])
            running[event.event_id] = RunningAttempt(
                event.event_id, event.name, settings.attempt, dict(settings.timeouts), event.timestamp
            )
        elif isinstance(event, (h.TaskCompletedEvent, h.TaskFailedEvent)):
            running.pop(event.task_scheduled_id, None)
        elif isinstance(event, h.EntityOperationSignaledEvent) and event.operation == "cancel" and event.input:
            running.pop(_int(event.input), None)
        elif isinstance(event, h.EventRaisedEvent) and event.name.casefold() == CONTROL_EVENT and event.input:
            _report(running, event)
    return sorted(running.values(), key=lambda a: a.task_id)


def _report(running: dict[int, RunningAttempt], event: h.EventRaisedEvent) -> None:
    try:
        body = json.loads(event.input or "")
        attempt = running.get(int(body["task"]))
    except (ValueError, KeyError, TypeError):
        return
    if attempt is None:
        return
    if attempt.started_at is None:
        attempt.started_at = event.timestamp
    if body.get("kind") == "beat":
        attempt.last_heartbeat_at = event.timestamp
        if isinstance(body.get("details"), str):
            attempt.last_heartbeat_details = json.loads(body["details"])


def _int(text: str) -> int:
    try:
        return int(json.loads(text))
    except (ValueError, TypeError):
        return -1
