"""The thread service: threads' records, and their state read and updated through the thread's orchestration."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

from durabletask.extensions.langgraph import DurableGraph, GraphMismatchError, GraphRunError, instance_id
from durabletask.extensions.langgraph._records import lost_runs, record_id, values_fields
from durabletask.extensions.langgraph._serde import dump
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError, bad_request, conflict, not_found
from durabletask.extensions.langgraph._server.state import (
    checkpoint_id_of,
    checkpoint_json,
    command_of,
    empty_state,
    snapshot_json,
)
from durabletask.extensions.langgraph._server.threads_records import Records, new_record, now, thread_json
from durabletask.extensions.langgraph._server.threads_search import matches, page

#: Longest thread ID accepted (LangGraph's server takes any string; a record's key hashes long ones).
MAX_THREAD_ID = 1000


def check_thread_id(thread_id: Any, field: str = "thread_id") -> str:
    """``thread_id`` if a thread can have it; 422 naming the field otherwise."""
    if not isinstance(thread_id, str):
        raise bad_request(f"'{field}' must be a string, not {type(thread_id).__name__}")
    if not thread_id:
        raise bad_request(f"'{field}' must not be empty")
    if len(thread_id) > MAX_THREAD_ID:
        raise bad_request(f"'{field}' is {len(thread_id)} characters long; the limit is {MAX_THREAD_ID}")
    if "\x00" in thread_id or any(0xD800 <= ord(ch) <= 0xDFFF for ch in thread_id):
        raise bad_request(f"'{field}' holds a NUL or a lone surrogate character, which no thread ID can hold")
    return thread_id


class Graphs:
    """The project's graphs as ``DurableGraph`` s, opened for each use as LangGraph's server opens them."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    @contextlib.asynccontextmanager
    async def open(
        self, graph_id: str, access: str, *, thread_id: str | None = None, context: Any = None
    ) -> AsyncIterator[DurableGraph]:
        """The graph ``graph_id`` on the task hub (a factory's, made for this use); 404 when the project has none."""
        spec = self.ctx.graphs.get(graph_id)
        if spec is None:
            raise not_found(f"graph {graph_id!r}")
        if not hasattr(spec, "open"):  # a compiled graph given as it is
            yield self._durable(graph_id, spec)
            return
        config = {"configurable": {"thread_id": thread_id}} if thread_id else {}
        async with spec.open(access, config=config, context=context) as graph:
            yield self._durable(graph_id, graph)

    def _durable(self, graph_id: str, graph: Any) -> DurableGraph:
        cache: dict[tuple[str, int], DurableGraph] = self.ctx.extras.setdefault("durable_graphs", {})
        key = (graph_id, id(graph))
        if key not in cache or cache[key].graph is not graph:
            cache[key] = DurableGraph(self.ctx.client, graph_id, graph)
        return cache[key]


def _config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
        configurable["checkpoint_ns"] = ""
    return {"configurable": configurable}


def graph_error(error: Exception) -> HttpError:
    """A LangGraph error of a state read or update, as the answer that says it (409 mismatch, 422 refused)."""
    if isinstance(error, GraphMismatchError):
        return conflict(str(error))
    if isinstance(error, GraphRunError):
        return bad_request(f"{error.error_type}: {error.error_message}")
    return bad_request(str(error))


def _fields(snapshot: Any, graph_id: str) -> dict[str, Any]:
    """The thread's record fields after a state update: its graph, values, pending interrupts and status."""
    interrupts = {task.id: list(task.interrupts) for task in snapshot.tasks if task.interrupts}
    values = values_fields(dump(snapshot.values, "the thread's values"), dump(interrupts, "the thread's interrupts"))
    return {"graph_id": graph_id, **values, "status": "interrupted" if interrupts else "idle"}


def _steps(supersteps: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """``supersteps`` of a thread's creation as LangGraph's ``StateUpdate`` s (422 naming what is malformed)."""
    from langgraph.types import StateUpdate

    steps = []
    for n, step in enumerate(supersteps):
        updates = step.get("updates") if isinstance(step, Mapping) else None
        if not isinstance(updates, list) or not all(isinstance(u, Mapping) for u in updates):
            raise bad_request(f"'supersteps[{n}].updates' must be a list of objects with 'values' and 'as_node'")
        for u in updates:
            if not isinstance(u.get("as_node"), str):
                raise bad_request(f"'supersteps[{n}].updates[].as_node' must be a node's name")
        steps.append(
            [
                StateUpdate(command_of(u["command"]) if u.get("command") else u.get("values"), u["as_node"])
                for u in updates
            ]
        )
    return steps


class ThreadServiceImpl:
    """:class:`~durabletask.extensions.langgraph._server.services.ThreadService` on the task hub."""

    #: Seconds after which a run recorded ``pending`` but never handed to its thread's orchestration counts as lost:
    #: its server stopped between the two steps. Far above the time a live server takes between them.
    LOST_AFTER = 30.0

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self.records = Records(ctx.client)
        self.graphs = Graphs(ctx)

    async def record(self, thread_id: str) -> dict[str, Any]:
        """The thread's record; 404 when there is none. Runs found lost (see ``_records.lost_runs``) end first."""
        found = await self.records.read(check_thread_id(thread_id))
        if found is None:
            raise not_found(f"thread {thread_id!r}")
        if lost_runs(found, now(), self.LOST_AFTER):
            # One-way, so a read never waits on a worker; the record decides (a run handed over meanwhile stays).
            # Only an admission, which reads the record back, cancels what the record found lost.
            data = {"at": now(), "lost_after": self.LOST_AFTER, "by": uuid.uuid4().hex}
            await self.ctx.client.signal_entity(record_id(thread_id), "lost", data)
        return found

    async def cancel_lost(self, thread_id: str, runs: Mapping[str, Any], by: str) -> None:
        """Cancel on the thread's orchestration the runs the record found lost when it admitted run ``by`` (best
        effort): should one have reached it after all, it never runs."""
        for lost, run in runs.items():
            if run.get("lost_to") != by:
                continue
            graph_id = str(run.get("graph_id"))
            with contextlib.suppress(Exception):
                async with self.graphs.open(graph_id, "threads.update", thread_id=thread_id) as graph:
                    await graph.asubmit("cancel", {"target": lost}, {"configurable": {"thread_id": thread_id}})

    async def create(
        self,
        *,
        thread_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
        supersteps: Sequence[Mapping[str, Any]] | None = None,
        graph_id: str | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        thread_id = check_thread_id(thread_id) if thread_id is not None else str(uuid.uuid4())
        existing = await self.records.read(thread_id)
        if existing is not None:
            if if_exists == "do_nothing":
                return thread_json(existing)
            raise conflict(f"thread {thread_id!r} already exists")
        graph_id = graph_id or (metadata or {}).get("graph_id")
        record = new_record(thread_id, metadata or {}, graph_id=graph_id)
        ttl = ttl or self.ctx.settings.project.thread_ttl  # langgraph.json's checkpointer.ttl.default_ttl
        if ttl:
            record["ttl"] = dict(ttl)
        steps = _steps(supersteps) if supersteps else None
        if steps and not graph_id:
            raise bad_request("'supersteps' need a graph: give 'graph_id' in the metadata")
        try:
            written = await self.records.write(thread_id, "put", {"record": record})
        except HttpError as lost:  # another request made the thread first
            if lost.status != 409 or if_exists != "do_nothing":
                raise
            return thread_json(await self.record(thread_id))
        if steps and graph_id:
            async with self.graphs.open(graph_id, "threads.update", thread_id=thread_id) as graph:
                try:
                    await graph.abulk_update_state(_config(thread_id), steps)
                    snapshot = await graph.aget_state(_config(thread_id))
                except (GraphMismatchError, GraphRunError, ValueError) as error:
                    raise graph_error(error) from None
            written = await self.records.write(thread_id, "run", {"thread": _fields(snapshot, graph_id), "at": now()})
        return thread_json(written or record)

    async def get(self, thread_id: str) -> dict[str, Any]:
        return await self.full(await self.record(thread_id))

    async def full(self, record: dict[str, Any]) -> dict[str, Any]:
        """The ``Thread`` of a record, with its values read from the thread's state when the record has none."""
        thread = thread_json(record)
        if record.get("values_elsewhere") and record.get("graph_id"):
            state = await self.get_state(str(record["thread_id"]))
            by_task = {t["id"]: t["interrupts"] for t in state["tasks"] if t["interrupts"]}
            thread.update(values=state["values"], interrupts=by_task)
        return thread

    async def update(
        self, thread_id: str, *, metadata: Mapping[str, Any] | None = None, ttl: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        await self.record(thread_id)
        data: dict[str, Any] = {"metadata": dict(metadata or {}), "updated_at": now()}
        if ttl:
            data["ttl"] = dict(ttl)
        written = await self.records.write(thread_id, "patch", data)
        if written is None:
            raise not_found(f"thread {thread_id!r}")
        return thread_json(written)

    async def delete(self, thread_id: str) -> None:
        record = await self.record(thread_id)
        if record.get("graph_id"):
            instance = instance_id(record["graph_id"], thread_id)
            state = await self.ctx.client.get_orchestration_state(instance)
            if state is not None:
                if state.runtime_status.name not in ("COMPLETED", "FAILED", "TERMINATED"):
                    await self.ctx.client.terminate_orchestration(instance, output="thread deleted", recursive=True)
                    await self.ctx.client.wait_for_orchestration_completion(instance, timeout=30)
                await self.ctx.client.purge_orchestration(instance, recursive=True)
        await self.records.write(thread_id, "delete", {})

    async def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        values: Mapping[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        status: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str | None = None,
        select: Sequence[str] | None = None,
        extract: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        threads = [thread_json(r) for r in await self.records.all()]
        found = [t for t in threads if matches(t, metadata=metadata, values=values, ids=ids, status=status)]
        return page(
            found, limit=limit, offset=offset, sort_by=sort_by, sort_order=sort_order, select=select, extract=extract
        )

    async def count(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        values: Mapping[str, Any] | None = None,
        status: str | None = None,
    ) -> int:
        threads = [thread_json(r) for r in await self.records.all()]
        return sum(1 for t in threads if matches(t, metadata=metadata, values=values, status=status))

    async def copy(self, thread_id: str) -> dict[str, Any]:
        record = await self.record(thread_id)
        target = str(uuid.uuid4())
        graph_id = record.get("graph_id")
        made = new_record(target, record.get("metadata") or {}, graph_id=graph_id)
        if graph_id:
            async with self.graphs.open(graph_id, "threads.read", thread_id=thread_id) as graph:
                try:
                    await graph.acopy_thread(_config(thread_id), _config(target))
                    snapshot = await graph.aget_state(_config(target))
                except (GraphMismatchError, GraphRunError) as error:
                    raise graph_error(error) from None
            made.update(_fields(snapshot, graph_id))
            made["status"] = "interrupted" if made["status"] == "interrupted" or snapshot.next else "idle"
        written = await self.records.write(target, "put", {"record": made})
        return thread_json(written or made)

    async def prune(self, thread_ids: Sequence[str], *, strategy: Literal["delete", "keep_latest"]) -> int:
        pruned = 0
        for thread_id in thread_ids:
            with contextlib.suppress(HttpError):
                if strategy == "delete":
                    await self.delete(thread_id)
                else:
                    await self.keep_latest(thread_id)
                pruned += 1
        return pruned

    async def keep_latest(self, thread_id: str) -> None:
        """Keep only the thread's latest checkpoint (422 for a graph whose DeltaChannels need them all)."""
        record = await self.record(thread_id)
        if not record.get("graph_id"):
            return
        async with self.graphs.open(record["graph_id"], "threads.update", thread_id=thread_id) as graph:
            try:
                await graph.aprune_thread(_config(thread_id))
            except (GraphMismatchError, GraphRunError) as error:
                raise graph_error(error) from None

    async def get_state(
        self, thread_id: str, *, checkpoint: Mapping[str, Any] | None = None, subgraphs: bool = False
    ) -> dict[str, Any]:
        record = await self.record(thread_id)
        checkpoint_id = checkpoint_id_of(checkpoint)
        if not record.get("graph_id"):
            if checkpoint_id:
                raise not_found(f"checkpoint {checkpoint_id!r} of thread {thread_id!r}")
            return empty_state(thread_id)
        async with self.graphs.open(record["graph_id"], "threads.read", thread_id=thread_id) as graph:
            try:
                snapshot = await graph.aget_state(_config(thread_id, checkpoint_id), subgraphs=subgraphs)
            except (GraphMismatchError, GraphRunError) as error:
                raise graph_error(error) from None
        if checkpoint_id and not snapshot.config:
            raise not_found(f"checkpoint {checkpoint_id!r} of thread {thread_id!r}")
        return snapshot_json(snapshot) if snapshot.config else empty_state(thread_id)

    async def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None = None,
        checkpoint: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        record = await self.record(thread_id)
        graph_id = record.get("graph_id") or (record.get("metadata") or {}).get("graph_id")
        if not graph_id:
            raise conflict(f"thread {thread_id!r} has no graph yet: run it once, or create it with a graph_id")
        async with self.graphs.open(graph_id, "threads.update", thread_id=thread_id) as graph:
            try:
                config = await graph.aupdate_state(
                    _config(thread_id, checkpoint_id_of(checkpoint)), values, as_node=as_node
                )
                snapshot = await graph.aget_state(_config(thread_id))
            except (GraphMismatchError, GraphRunError, ValueError) as error:
                raise graph_error(error) from None
        await self.records.write(thread_id, "run", {"thread": _fields(snapshot, graph_id), "at": now()})
        return {"checkpoint": checkpoint_json(config)}

    async def history(
        self,
        thread_id: str,
        *,
        limit: int = 10,
        before: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        checkpoint: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        record = await self.record(thread_id)
        if not record.get("graph_id"):
            return []
        before_id = checkpoint_id_of(before, "before")
        async with self.graphs.open(record["graph_id"], "threads.read", thread_id=thread_id) as graph:
            try:
                snapshots = graph.aget_state_history(
                    _config(thread_id, checkpoint_id_of(checkpoint)),
                    filter=dict(metadata) if metadata else None,
                    before=_config(thread_id, before_id) if before_id else None,
                    limit=limit,
                )
                return [snapshot_json(s) async for s in snapshots]
            except (GraphMismatchError, GraphRunError) as error:
                raise graph_error(error) from None
