"""What the dashboard's pages show, as JSON-ready dicts built from the client's models (no I/O, no web server).

Everything here is pure so the page contents are tested without a browser: the list filters and paging, the
instance overview, the history table with each completion matched to what it completes, and the timeline bars.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from durabletask import history
from durabletask._client.models import OrchestrationState, OrchestrationStatus
from durabletask.entities import EntityMetadata

PAGE_SIZE = 25
MAX_PAGE_SIZE = 200
STATUSES = tuple(s.name for s in OrchestrationStatus)

# A completion names what it completes by the scheduling event's ID (the sequence ID the orchestrator used).
_COMPLETES = {
    "TaskCompletedEvent": "task_scheduled_id",
    "TaskFailedEvent": "task_scheduled_id",
    "SubOrchestrationInstanceCompletedEvent": "task_scheduled_id",
    "SubOrchestrationInstanceFailedEvent": "task_scheduled_id",
    "TimerFiredEvent": "timer_id",
}
_OPENS = {
    "TaskScheduledEvent": "activity",
    "SubOrchestrationInstanceCreatedEvent": "sub-orchestration",
    "TimerCreatedEvent": "timer",
}


class FilterError(ValueError):
    """A list filter in the URL that cannot be understood; the message names the parameter."""


def parse_time(value: str, field: str) -> datetime:
    """An ISO 8601 time typed in the page (UTC when it names no zone)."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FilterError(f"{field}: {value!r} is not an ISO 8601 time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class ListFilter:
    """The orchestration list's filters, exactly as the page's URL carries them."""

    name: str = ""
    statuses: tuple[str, ...] = ()
    tag: str = ""  # "key" or "key=value"
    created_from: datetime | None = None
    created_to: datetime | None = None
    prefix: str = ""
    cursor: str | None = None  # the backend's continuation token where the page starts; None: the first page
    page_size: int = PAGE_SIZE

    @staticmethod
    def parse(query: Mapping[str, str], cursor: str | None = None) -> ListFilter:
        """Reads ``name``, ``status`` (comma-separated), ``tag``, ``from``, ``to``, ``prefix`` and ``size``."""
        statuses = tuple(s.strip().upper() for s in query.get("status", "").split(",") if s.strip())
        unknown = [s for s in statuses if s not in STATUSES]
        if unknown:
            raise FilterError(f"status: unknown {', '.join(unknown)}; choose from {', '.join(STATUSES)}")
        try:
            size = int(query.get("size") or PAGE_SIZE)
        except ValueError:
            raise FilterError("size must be a whole number") from None
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise FilterError(f"size must be between 1 and {MAX_PAGE_SIZE}")
        return ListFilter(
            name=query.get("name", "").strip(),
            statuses=statuses,
            tag=query.get("tag", "").strip(),
            created_from=parse_time(query["from"], "from") if query.get("from") else None,
            created_to=parse_time(query["to"], "to") if query.get("to") else None,
            prefix=query.get("prefix", "").strip(),
            cursor=cursor or None,
            page_size=size,
        )

    def matches_locally(self, state: OrchestrationState) -> bool:
        """The filters the protocol's query cannot express (name and tag) applied to one instance."""
        if self.name and state.name.lower() != self.name.lower():
            return False
        if self.tag:
            key, _, value = self.tag.partition("=")
            tags = state.tags or {}
            if key not in tags or ("=" in self.tag and tags[key] != value):
                return False
        return True


def iso(value: datetime | None) -> str | None:
    """ISO 8601 with its zone: a time without one is UTC (as the client returns them), never the browser's."""
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()


def failure_json(failure: Any) -> dict[str, Any] | None:
    if failure is None:
        return None
    return {
        "error_type": failure.error_type,
        "message": failure.message,
        "stack_trace": failure.stack_trace,
        "inner": failure_json(getattr(failure, "inner_failure", None)),
    }


def summary_json(state: OrchestrationState) -> dict[str, Any]:
    """One row of the orchestration list."""
    return {
        "instance_id": state.instance_id,
        "name": state.name,
        "version": state.version,
        "status": state.runtime_status.name,
        "tags": state.tags or {},
        "created_at": iso(state.created_at),
        "last_updated_at": iso(state.last_updated_at),
    }


def fingerprint(value: Any) -> str:
    """A short fingerprint of what a page shows (JSON-ready data): it changes when the page should refresh."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def digest(states: Iterable[OrchestrationState]) -> str:
    """A short fingerprint of instances' IDs, statuses and update times: it changes when a page should refresh."""
    seen = sorted((s.instance_id, s.runtime_status.name, iso(s.last_updated_at)) for s in states)
    return hashlib.sha256(repr(seen).encode()).hexdigest()[:16]


def instance_json(state: OrchestrationState, events: Sequence[history.HistoryEvent]) -> dict[str, Any]:
    """The instance page: overview, children, history rows and timeline bars."""
    children = [
        {"instance_id": e.instance_id, "name": e.name}
        for e in events
        if isinstance(e, history.SubOrchestrationInstanceCreatedEvent)
    ]
    return {
        **summary_json(state),
        "execution_id": state.execution_id,
        "input": state.serialized_input,
        "output": state.serialized_output,
        "custom_status": state.serialized_custom_status,
        "failure": failure_json(state.failure_details),
        "scheduled_start_at": iso(state.scheduled_start_at),
        "completed_at": iso(state.completed_at),
        "parent_instance_id": state.parent_instance_id,
        "children": children,
        "fingerprint": dict(state._fingerprint_tags),
        "history": history_rows(events),
        "timeline": timeline_bars(events, state),
    }


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _status_name(value: int) -> str | int:
    try:
        return OrchestrationStatus(value).name
    except ValueError:
        return value


def history_rows(events: Sequence[history.HistoryEvent]) -> list[dict[str, Any]]:
    """One row per event with its payload fields; a completion carries ``completes`` (the scheduling event ID)."""
    names: dict[int, str] = {}
    rows = []
    for event in events:
        kind = type(event).__name__
        fields = {k: v for k, v in _plain(event).items() if k not in ("event_id", "timestamp") and v is not None}
        if isinstance(fields.get("orchestration_status"), int):
            fields["orchestration_status"] = _status_name(fields["orchestration_status"])
        ref_field = _COMPLETES.get(kind)
        ref = getattr(event, ref_field) if ref_field else None
        if kind in _OPENS:
            names[event.event_id] = getattr(event, "name", None) or _OPENS[kind]
        rows.append(
            {
                "event_id": event.event_id,
                "kind": kind.removesuffix("Event"),
                "timestamp": iso(event.timestamp),
                "name": getattr(event, "name", None) or (names.get(ref, "") if ref is not None else ""),
                "completes": ref,
                "fields": fields,
            }
        )
    return rows


def _bar(kind: str, name: str, start: datetime, sequence_id: int | None, attempt: int = 1) -> dict[str, Any]:
    return {
        "kind": kind,
        "name": name,
        "start": iso(start),
        "end": None,
        "outcome": "running",
        "sequence_id": sequence_id,
        "attempt": attempt,
    }


def timeline_bars(events: Sequence[history.HistoryEvent], state: OrchestrationState) -> list[dict[str, Any]]:
    """Gantt bars: the orchestration, then each activity, timer and sub-orchestration from schedule to end.

    Work scheduled again under a name whose last attempt failed is a retry (attempt n), and a timer started
    right after a failure is shown as the retry's delay.
    """
    if not events:
        return []
    whole = _bar("orchestration", state.name, events[0].timestamp, None)
    terminal = state.runtime_status.name in _TERMINAL
    whole["end"] = iso(state.last_updated_at) if terminal else iso(datetime.now(timezone.utc))
    whole["outcome"] = state.runtime_status.name.lower()
    bars = [whole]
    open_bars: dict[int, dict[str, Any]] = {}
    failed_attempts: dict[str, int] = {}
    last_failed = False
    for event in events:
        kind = type(event).__name__
        if kind in _OPENS:
            name = getattr(event, "name", None) or ("retry delay" if last_failed else "timer")
            attempt = 1 if kind == "TimerCreatedEvent" else failed_attempts.get(name, 0) + 1
            open_bars[event.event_id] = _bar(_OPENS[kind], name, event.timestamp, event.event_id, attempt)
            bars.append(open_bars[event.event_id])
            last_failed = False
        elif kind in _COMPLETES:
            bar = open_bars.pop(getattr(event, _COMPLETES[kind]), None)
            if bar is None:
                continue
            bar["end"] = iso(event.timestamp)
            last_failed = kind.endswith("FailedEvent")
            bar["outcome"] = "failed" if last_failed else "completed"
            if last_failed:
                failed_attempts[str(bar["name"])] = int(bar["attempt"])
    return bars


_TERMINAL = {"COMPLETED", "FAILED", "TERMINATED", "CONTINUED_AS_NEW"}


def entity_json(entity: EntityMetadata) -> dict[str, Any]:
    """One entity: its serialized state as stored, and its lock owner as given (an orchestration's instance ID)."""
    state = entity.get_state() if entity.includes_state else None
    return {
        "id": str(entity.id),
        "name": entity.id.entity,
        "key": entity.id.key,
        "last_modified": iso(entity.last_modified),
        "backlog_queue_size": entity.backlog_queue_size,
        "locked_by": entity._locked_by or None,
        "state": state if state is None or isinstance(state, str) else json.dumps(state),
    }
