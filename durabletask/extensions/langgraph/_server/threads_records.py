"""Threads' records (the ``lg.thread`` entities) read and written from the server, each write read back.

A write is a one-way entity signal; the server then reads the record until the write's operation ID is in it,
so a client that created or changed a thread reads it back changed, through this server or any other.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Mapping
from typing import Any

from durabletask.client import AsyncTaskHubGrpcClient, EntityQuery
from durabletask.extensions.langgraph._records import RECORD_ENTITY, record_id
from durabletask.extensions.langgraph._serde import load
from durabletask.extensions.langgraph._server.errors import HttpError, conflict
from durabletask.extensions.langgraph._server.state import interrupt_json, to_json

#: Seconds a write may take to reach its record (a worker hosting the record entity must be running).
WRITE_TIMEOUT = 30.0
_POLL = (0.005, 0.2)


def now() -> str:
    """The current time, as the records keep times (ISO 8601, UTC)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class Records:
    """The records of a task hub's threads, through one client."""

    def __init__(self, client: AsyncTaskHubGrpcClient) -> None:
        self.client = client

    async def read(self, thread_id: str) -> dict[str, Any] | None:
        """The record of ``thread_id`` (``None`` when there is none)."""
        found = await self.client.get_entity(record_id(thread_id), include_state=True)
        if found is None:
            return None
        state = found.get_typed_state(dict)
        return state if isinstance(state, dict) and state.get("thread_id") == thread_id else None

    async def write(
        self, thread_id: str, operation: str, data: Mapping[str, Any], *, refused: str | None = None
    ) -> dict[str, Any] | None:
        """Apply ``operation`` to the record and return the record once the write is in (``None``: deleted).

        Raises:
            HttpError: 409 when the record refused the write (``refused`` says why; by default, that the thread
                already exists), 503 when the write did not reach the record in time.
        """
        op = uuid.uuid4().hex
        await self.client.signal_entity(record_id(thread_id), operation, {**data, "op": op})
        deadline = time.monotonic() + WRITE_TIMEOUT
        pause = _POLL[0]
        while True:
            found = await self.client.get_entity(record_id(thread_id), include_state=True)
            state = found.get_typed_state(dict) if found is not None else None
            if operation == "delete" and not state:
                return None
            if isinstance(state, dict) and op in (state.get("ops") or []):
                return state
            if isinstance(state, dict) and op in (state.get("refused") or []):
                raise conflict(refused or f"thread {thread_id!r} already exists")
            if operation == "patch" and not state:
                return None
            if time.monotonic() > deadline:
                raise HttpError(
                    503,
                    f"the record of thread {thread_id!r} was not written within {WRITE_TIMEOUT:g} s: is a worker "
                    "serving the project's graphs running?",
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, _POLL[1])

    async def all(self) -> list[dict[str, Any]]:
        """Every thread's record."""
        query = EntityQuery(instance_id_starts_with=f"@{RECORD_ENTITY}@", include_state=True, page_size=500)
        found = await self.client.get_all_entities(query)
        records = []
        for entity in found:
            state = entity.get_typed_state(dict)
            if isinstance(state, dict) and state.get("thread_id") is not None:
                records.append(state)
        return records


def new_record(thread_id: str, metadata: Mapping[str, Any], *, graph_id: str | None = None) -> dict[str, Any]:
    """The record of a thread made now."""
    at = now()
    return {
        "thread_id": thread_id,
        "created_at": at,
        "updated_at": at,
        "metadata": dict(metadata),
        "graph_id": graph_id,
        "status": "idle",
        "values": None,
        "interrupts": None,
        "runs": {},
    }


def _serialized(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"t", "b"}


def stored(value: Any) -> Any:
    """A value the thread's orchestration stored in the record (LangGraph's serializer), as LangGraph's objects."""
    return load(value) if _serialized(value) else value


def thread_json(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record as the SDK's ``Thread``."""
    interrupts = stored(record.get("interrupts")) or {}
    values = to_json(stored(record.get("values")))
    metadata = dict(record.get("metadata") or {})
    if record.get("graph_id") and "graph_id" not in metadata:
        metadata["graph_id"] = record["graph_id"]
    return {
        "thread_id": record["thread_id"],
        "created_at": record.get("created_at"),
        "updated_at": record.get("updated_at") or record.get("created_at"),
        "state_updated_at": record.get("state_updated_at") or record.get("created_at"),
        "metadata": metadata,
        "status": thread_status(record),
        "values": values,
        "interrupts": {task: [interrupt_json(i) for i in found] for task, found in (interrupts or {}).items()},
        "error": record.get("error"),
    }


def active_runs(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The thread's runs that are pending or running, oldest first."""
    runs = (record.get("runs") or {}).values()
    return sorted((r for r in runs if r.get("status") in ("pending", "running")), key=lambda r: r["created_at"])


def thread_status(record: Mapping[str, Any]) -> str:
    """``busy`` while a run is pending or running, else what the thread's last run left."""
    if active_runs(record):
        return "busy"
    status = record.get("status") or "idle"
    return "idle" if status == "busy" else str(status)
