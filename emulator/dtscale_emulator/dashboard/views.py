"""What the dashboard's pages show, as JSON-ready dicts built from its view models (no I/O, no web server).

Everything here is pure so the page contents are tested without a browser: the list filters and paging, the
instance overview, the history table with each completion matched to what it completes, and the timeline bars.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from dtscale_emulator.dashboard.models import STATUSES, EntityRow, HistoryEntry, InstanceRow

PAGE_SIZE = 25
MAX_PAGE_SIZE = 200

# A completion names what it completes by the scheduling event's ID (the sequence ID the orchestrator used).
_COMPLETES = {
    "TaskCompleted": "task_scheduled_id",
    "TaskFailed": "task_scheduled_id",
    "SubOrchestrationInstanceCompleted": "task_scheduled_id",
    "SubOrchestrationInstanceFailed": "task_scheduled_id",
    "TimerFired": "timer_id",
}
_OPENS = {
    "TaskScheduled": "activity",
    "SubOrchestrationInstanceCreated": "sub-orchestration",
    "TimerCreated": "timer",
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

    def matches_locally(self, row: InstanceRow) -> bool:
        """The filters the protocol's query cannot express (name and tag) applied to one instance."""
        if self.name and row.name.lower() != self.name.lower():
            return False
        if self.tag:
            key, _, value = self.tag.partition("=")
            tags = row.tags
            if key not in tags or ("=" in self.tag and tags[key] != value):
                return False
        return True


def iso(value: datetime | None) -> str | None:
    """ISO 8601 with its zone: a time without one is UTC, never the browser's."""
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()


def summary_json(row: InstanceRow) -> dict[str, Any]:
    """One row of the orchestration list."""
    return {
        "instance_id": row.instance_id,
        "name": row.name,
        "version": row.version,
        "status": row.status,
        "tags": row.tags,
        "created_at": iso(row.created_at),
        "last_updated_at": iso(row.last_updated_at),
    }


def fingerprint(value: Any) -> str:
    """A short fingerprint of what a page shows (JSON-ready data): it changes when the page should refresh."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def digest(rows: Iterable[InstanceRow]) -> str:
    """A short fingerprint of instances' IDs, statuses and update times: it changes when a page should refresh."""
    seen = sorted((r.instance_id, r.status, iso(r.last_updated_at)) for r in rows)
    return hashlib.sha256(repr(seen).encode()).hexdigest()[:16]


def instance_json(row: InstanceRow, entries: Sequence[HistoryEntry]) -> dict[str, Any]:
    """The instance page: overview, children, history rows and timeline bars."""
    children = [
        {"instance_id": e.fields.get("instance_id", ""), "name": e.fields.get("name", "")}
        for e in entries
        if e.kind == "SubOrchestrationInstanceCreated"
    ]
    return {
        **summary_json(row),
        "execution_id": row.execution_id,
        "input": row.input,
        "output": row.output,
        "custom_status": row.custom_status,
        "failure": row.failure,
        "scheduled_start_at": iso(row.scheduled_start_at),
        "completed_at": iso(row.completed_at),
        "parent_instance_id": row.parent_instance_id,
        "children": children,
        "fingerprint": row.fingerprint,
        "history": history_rows(entries),
        "timeline": timeline_bars(entries, row),
    }


def history_rows(entries: Sequence[HistoryEntry]) -> list[dict[str, Any]]:
    """One row per event with its payload fields; a completion carries ``completes`` (the scheduling event ID)."""
    names: dict[int, str] = {}
    rows = []
    for entry in entries:
        ref_field = _COMPLETES.get(entry.kind)
        ref = entry.fields.get(ref_field) if ref_field else None
        if entry.kind in _OPENS:
            names[entry.event_id] = entry.name or _OPENS[entry.kind]
        rows.append(
            {
                "event_id": entry.event_id,
                "kind": entry.kind,
                "timestamp": iso(entry.timestamp),
                "name": entry.name or (names.get(ref, "") if ref is not None else ""),
                "completes": ref,
                "fields": entry.fields,
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


def timeline_bars(entries: Sequence[HistoryEntry], row: InstanceRow) -> list[dict[str, Any]]:
    """Gantt bars: the orchestration, then each activity, timer and sub-orchestration from schedule to end.

    Work scheduled again under a name whose last attempt failed is a retry (attempt n), and a timer started
    right after a failure is shown as the retry's delay.
    """
    if not entries:
        return []
    whole = _bar("orchestration", row.name, entries[0].timestamp, None)
    terminal = row.status in _TERMINAL
    whole["end"] = iso(row.last_updated_at) if terminal else iso(datetime.now(timezone.utc))
    whole["outcome"] = row.status.lower()
    bars = [whole]
    open_bars: dict[int, dict[str, Any]] = {}
    failed_attempts: dict[str, int] = {}
    last_failed = False
    for entry in entries:
        kind = entry.kind
        if kind in _OPENS:
            name = entry.name or ("retry delay" if last_failed else "timer")
            attempt = 1 if kind == "TimerCreated" else failed_attempts.get(name, 0) + 1
            open_bars[entry.event_id] = _bar(_OPENS[kind], name, entry.timestamp, entry.event_id, attempt)
            bars.append(open_bars[entry.event_id])
            last_failed = False
        elif kind in _COMPLETES:
            bar = open_bars.pop(entry.fields.get(_COMPLETES[kind], -1), None)
            if bar is None:
                continue
            bar["end"] = iso(entry.timestamp)
            last_failed = kind.endswith("Failed")
            bar["outcome"] = "failed" if last_failed else "completed"
            if last_failed:
                failed_attempts[str(bar["name"])] = int(bar["attempt"])
    return bars


_TERMINAL = {"COMPLETED", "FAILED", "TERMINATED", "CONTINUED_AS_NEW"}


def entity_json(entity: EntityRow) -> dict[str, Any]:
    """One entity: its serialized state as stored, and its lock owner as given (an orchestration's instance ID)."""
    return {
        "id": entity.id,
        "name": entity.name,
        "key": entity.key,
        "last_modified": iso(entity.last_modified),
        "backlog_queue_size": entity.backlog_queue_size,
        "locked_by": entity.locked_by,
        "state": entity.state,
    }
