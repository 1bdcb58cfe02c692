"""A thread's stream joined: the events of all its runs, one after another, from its first run on, live."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from durabletask.extensions.langgraph import instance_id
from durabletask.extensions.langgraph._server.errors import HttpError
from durabletask.extensions.langgraph._server.runs_stream import (
    FAILED_RANK,
    FROM_START,
    IDLE_LOOK,
    Key,
    RunView,
    event_id,
    thread_items,
)
from durabletask.extensions.langgraph._server.services import StreamEvent


class RunRecords(Protocol):
    """What the thread's stream needs of the run service: the hub's client and the records."""

    @property
    def client(self) -> Any:
        """The task hub's async client."""
        ...

    async def thread_record(self, thread_id: str) -> dict[str, Any]:
        """The thread's record (404 when missing)."""
        ...

    async def run_record(self, thread_id: str, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The thread's record and the run's (404 when missing)."""
        ...


class _Runs:
    """The runs seen on the thread's stream so far: their views, and the ones that have ended."""

    def __init__(self, service: RunRecords, thread_id: str, stream_mode: Sequence[str] | None) -> None:
        self.service = service
        self.thread_id = thread_id
        self.stream_mode = stream_mode
        self.views: dict[str, RunView] = {}
        self.ended: set[str] = set()

    async def view(self, run_id: str) -> tuple[RunView, bool]:
        """The run's view, and whether it is new (its events start with ``metadata``)."""
        if run_id in self.views:
            return self.views[run_id], False
        record = await self.service.thread_record(self.thread_id)
        run = (record.get("runs") or {}).get(run_id) or {}
        modes = self.stream_mode if self.stream_mode is not None else run.get("stream_mode") or ("values",)
        view = RunView(run_id, frozenset(modes), bool(run.get("subgraphs")))
        self.views[run_id] = view
        return view, True

    async def feed(self, item: Any, offset: int) -> list[tuple[str, Any]]:
        data = item.data
        run_id = data.get("r") if isinstance(data, dict) else None
        if run_id is None or run_id in self.ended:
            return []
        view, new = await self.view(str(run_id))
        out: list[tuple[str, Any]] = [("metadata", {"run_id": run_id, "attempt": 1})] if new else []
        out += view.feed(data, item.task_id, item.attempt, offset)
        if view.ended:
            out.append(("end", None))
            self.ended.add(str(run_id))
            del self.views[str(run_id)]
        return out

    async def failures(self, execution_ended: bool) -> list[tuple[Key, str, Any]]:
        """The ``error`` and ``end`` of each failed run whose record says so (of each, once the execution ended)."""
        out: list[tuple[Key, str, Any]] = []
        for run_id, view in list(self.views.items()):
            if view.failed_at is None:
                continue
            try:
                _, run = await self.service.run_record(self.thread_id, run_id)
            except HttpError:  # the run was deleted (or its thread): it ends as it failed
                run = {"status": "error"}
            if run.get("status") != "error" and not execution_ended:
                continue
            error_type, _, message = str(run.get("error") or "error: the run failed").partition(": ")
            error = {"error": error_type.rsplit(".", 1)[-1], "message": message}
            out.append(((view.failed_at, FAILED_RANK), "error", error))
            out.append(((view.failed_at, FAILED_RANK + 1), "end", None))
            self.ended.add(run_id)
            del self.views[run_id]
        return out


async def thread_events(
    service: RunRecords, thread_id: str, after: Key | None, stream_mode: Sequence[str] | None
) -> AsyncIterator[StreamEvent]:
    """Every run's events of the thread, after ``after`` (from the thread's first run when ``None``), until closed."""
    skip = after if after is not None else FROM_START
    while True:
        record = await service.thread_record(thread_id)
        if record.get("graph_id"):
            break
        await asyncio.sleep(IDLE_LOOK)
    runs = _Runs(service, thread_id, stream_mode)
    async for item in thread_items(service.client, instance_id(str(record["graph_id"]), thread_id)):
        if item is not None:
            offset = int(item.id.partition("-")[0])
            for rank, (name, data) in enumerate(await runs.feed(item, offset)):
                if (offset, rank) > skip:
                    yield StreamEvent(event_id((offset, rank)), name, data)
        if item is None:
            try:
                await service.thread_record(thread_id)
            except HttpError:  # the thread was deleted: its stream is over
                return
        if item is None or any(view.failed for view in runs.views.values()):
            for key, name, data in await runs.failures(execution_ended=item is None):
                if key > skip:
                    yield StreamEvent(event_id(key), name, data)
