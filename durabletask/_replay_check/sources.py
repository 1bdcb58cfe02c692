"""Where histories to check come from: a live endpoint (through the public client API), history-export files
written by either SDK, and the JSON that ``durabletask history --json`` prints."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from durabletask import history as h
from durabletask._client.sync_client import TaskHubGrpcClient
from durabletask._instance_models import OrchestrationQuery, OrchestrationStatus
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay_check.events import record_to_pb
from durabletask._replay_check.histories import OrchestrationHistory
from durabletask.extensions.history_export.reader import iter_exported_records

#: File names read from a folder: both export formats (JSON dumps of ``history --json`` are ``.json`` too).
_SUFFIXES = (".json", ".jsonl.gz")


def _wanted(name: str, names: Collection[str] | None) -> bool:
    # Compared as ``durabletask list --name`` compares them.
    return not names or name.casefold() in {n.casefold() for n in names}


def _children(events: Iterable[h.HistoryEvent]) -> list[str]:
    return [e.instance_id for e in events if isinstance(e, h.SubOrchestrationInstanceCreatedEvent)]


def histories_from_client(
    client: TaskHubGrpcClient,
    *,
    instance_ids: Iterable[str] | None = None,
    names: Collection[str] | None = None,
    statuses: Collection[OrchestrationStatus] | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    sub_orchestrations: bool = True,
    source: str = "live endpoint",
) -> Iterator[OrchestrationHistory]:
    """The histories of the selected instances of a live task hub, fetched one at a time.

    Instances are those named in ``instance_ids``, or else every instance the query selects (by creation time and
    status), kept if their orchestrator name is among ``names``. With ``sub_orchestrations`` each one's
    sub-orchestrations follow it, whatever their name, each checked on its own. ``source`` labels them in reports.

    Args:
        client: A client of the task hub to read.
        instance_ids: Check exactly these instances; otherwise the query below selects them.
        names: Keep only instances of these orchestrator names; all names when ``None``.
        statuses: Keep only instances in these runtime statuses; all statuses when ``None`` or empty.
        created_from: Select instances created at or after this time (only without ``instance_ids``).
        created_to: Select instances created at or before this time (only without ``instance_ids``).
        sub_orchestrations: Follow each instance with its sub-orchestrations.
        source: The label reports show for these histories.

    Raises:
        LookupError: an instance named in ``instance_ids`` does not exist.
    """
    seen: set[str] = set()
    pending: list[str] = []
    if instance_ids is not None:
        for instance_id in instance_ids:
            state = client.get_orchestration_state(instance_id, fetch_payloads=False)
            if state is None:
                raise LookupError(f"no instance with ID '{instance_id}'")
            if _wanted(state.name, names) and (not statuses or state.runtime_status in statuses):
                pending.append(instance_id)
    else:
        query = OrchestrationQuery(
            created_time_from=created_from, created_time_to=created_to, runtime_status=list(statuses or []) or None
        )
        states = client.get_all_orchestration_states(query)
        pending.extend(s.instance_id for s in states if _wanted(s.name, names) and not s.instance_id.startswith("@"))
    while pending:
        instance_id = pending.pop(0)
        if instance_id in seen:
            continue
        seen.add(instance_id)
        events = client.get_orchestration_history(instance_id)
        yield OrchestrationHistory(instance_id, events, source)
        if sub_orchestrations:
            # Depth first, so a parent's children come right after it in the report.
            pending[0:0] = [child for child in _children(events) if child not in seen]


def _dumped(path: Path, records: list[Any]) -> OrchestrationHistory:
    """A ``durabletask history --json`` document: each event's fields and its class name under ``type``."""
    events: list[pb.HistoryEvent] = []
    for number, record in enumerate(records):
        if not isinstance(record, dict) or "type" not in record:
            raise ValueError(f"{path}: item {number} is not a history event (no 'type')")
        events.append(record_to_pb(record, kind_key="type"))
    instance_id = path.name.removesuffix(".json")
    for event in events:
        if event.HasField("executionStarted") and event.executionStarted.orchestrationInstance.instanceId:
            instance_id = event.executionStarted.orchestrationInstance.instanceId
            break
    return OrchestrationHistory.of_protocol_events(instance_id, events, str(path))


def _exported(path: Path) -> OrchestrationHistory:
    records = iter_exported_records(path)
    header = next(records, None)
    if not isinstance(header, dict) or "instance_id" not in header:
        raise ValueError(f"{path}: not an exported history (its first record has no 'instance_id')")
    events = [record_to_pb(record) for record in records]
    return OrchestrationHistory.of_protocol_events(str(header["instance_id"]), events, str(path))


def read_history_file(path: str | Path) -> OrchestrationHistory:
    """One file's history: an export file of either SDK (``.json`` or ``.jsonl.gz``) or a ``history --json`` dump.

    Args:
        path: The file to read.

    Raises:
        ValueError: the file is neither.
    """
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(64).lstrip()
    if head.startswith(b"["):
        return _dumped(path, json.loads(path.read_text(encoding="utf-8")))
    return _exported(path)


def _files(paths: Iterable[str | Path]) -> Iterator[Path]:
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(_SUFFIXES))
        else:
            yield path


def status_of(events: Iterable[pb.HistoryEvent]) -> OrchestrationStatus:
    """The runtime status a history implies (its last execution's)."""
    status = OrchestrationStatus.PENDING
    for event in events:
        kind = event.WhichOneof("eventType")
        if kind in ("executionStarted", "executionResumed"):
            status = OrchestrationStatus.RUNNING
        elif kind == "executionSuspended":
            status = OrchestrationStatus.SUSPENDED
        elif kind == "executionCompleted":
            status = OrchestrationStatus(event.executionCompleted.orchestrationStatus)
    return status


def _name_of(events: Iterable[pb.HistoryEvent]) -> str:
    return next((e.executionStarted.name for e in events if e.HasField("executionStarted")), "")


def histories_from_files(
    paths: Iterable[str | Path],
    *,
    instance_ids: Collection[str] | None = None,
    names: Collection[str] | None = None,
    statuses: Collection[OrchestrationStatus] | None = None,
) -> Iterator[OrchestrationHistory]:
    """The histories in export files and JSON dumps (folders are searched for ``*.json`` and ``*.jsonl.gz``),
    read one at a time and kept if they match the filters (by instance ID, orchestrator name, implied status).

    Args:
        paths: Files, or folders searched recursively.
        instance_ids: Keep only these instances.
        names: Keep only these orchestrator names.
        statuses: Keep only histories whose last execution is in one of these statuses.

    Raises:
        ValueError: a file is not a history; OSError: it cannot be read.
    """
    for path in _files(paths):
        history = read_history_file(path)
        if instance_ids and history.instance_id not in instance_ids:
            continue
        if not _wanted(_name_of(history.protocol_events()), names):
            continue
        if statuses and status_of(history.protocol_events()) not in statuses:
            continue
        yield history
