"""The run service: a run is a request to its thread's orchestration, recorded in the thread's record.

The server records a run as ``pending`` and hands it to the thread's orchestration; from then on the orchestration
records every status the run goes through, and publishes its chunks and result on the thread's durable stream,
which :mod:`runs_stream` reads back as the run's events.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from durabletask.client import OrchestrationStatus
from durabletask.extensions.langgraph import LangGraphError, StateSerializationError, instance_id
from durabletask.extensions.langgraph import _requests as rq
from durabletask.extensions.langgraph._records import lost_runs, record_id
from durabletask.extensions.langgraph._records_effects import run_kwargs
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError, bad_request, conflict, not_found
from durabletask.extensions.langgraph._server.runs_stream import (
    RunView,
    graph_modes,
    parse_event_id,
    run_events,
)
from durabletask.extensions.langgraph._server.runs_thread import thread_events
from durabletask.extensions.langgraph._server.services import (
    ASSISTANTS_KEY,
    CancelAction,
    ResolvedAssistant,
    RunRequest,
    StreamEvent,
)
from durabletask.extensions.langgraph._server.state import checkpoint_id_of, command_of, to_json
from durabletask.extensions.langgraph._server.threads_records import active_runs, now
from durabletask.extensions.langgraph._server.threads_service import ThreadServiceImpl, check_thread_id
from durabletask.extensions.langgraph._server.webhooks import check_webhook

ENDED = ("success", "error", "interrupted", "timeout")
#: Seconds to wait for a run's end to reach its record after its stream ended.
SETTLE_TIMEOUT = 30.0
RUN_FIELDS = (
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "multitask_strategy",
    "kwargs",
)


#: The largest ``kwargs`` a run's record keeps whole, as JSON text; a larger one keeps all but its input and command.
MAX_KWARGS_CHARS = 4096


def _bounded_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    found = to_json(kwargs)
    size = len(json.dumps(found))
    if size <= MAX_KWARGS_CHARS:
        return dict(found)
    note = f"<not kept: the run's kwargs are {size} characters of JSON, above {MAX_KWARGS_CHARS}>"
    return {**found, "input": note, "command": note if found.get("command") is not None else None}


def run_json(run: dict[str, Any]) -> dict[str, Any]:
    """A run's record as the SDK's ``Run``, with LangGraph's server's ``kwargs`` (see :func:`run_kwargs`) and its
    ``langsmith_session_name``, always null (this server sends nothing to LangSmith)."""
    return {**{key: run.get(key) for key in RUN_FIELDS}, "kwargs": run_kwargs(run), "langsmith_session_name": None}


def _config(request: RunRequest, assistant: ResolvedAssistant, thread_id: str, run_id: str) -> dict[str, Any]:
    """The run's config: the assistant's under the request's, with the thread and the run in ``configurable``."""
    config = {**dict(assistant.config), **dict(request.config or {})}
    configurable = {**dict(assistant.config.get("configurable") or {}), **dict(config.get("configurable") or {})}
    configurable.update(
        {
            "thread_id": thread_id,
            "run_id": run_id,
            "assistant_id": assistant.assistant_id,
            "graph_id": assistant.graph_id,
        }
    )
    checkpoint_id = checkpoint_id_of(request.checkpoint)
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    configurable.pop("checkpoint_ns", None)
    config["configurable"] = configurable
    return config


class RunServiceImpl:
    """:class:`~durabletask.extensions.langgraph._server.services.RunService` on the task hub."""

    def __init__(self, ctx: ServerContext, threads: ThreadServiceImpl) -> None:
        self.ctx = ctx
        self.threads = threads
        self.records = threads.records

    @property
    def client(self) -> Any:
        """The task hub's async client."""
        return self.ctx.client

    async def thread_record(self, thread_id: str) -> dict[str, Any]:
        """The thread's record (404 when missing)."""
        return await self.threads.record(thread_id)

    async def assistant(self, assistant_id: str) -> ResolvedAssistant:
        """The graph and defaults ``assistant_id`` names (the assistants module's resolver, else a graph ID)."""
        resolver = self.ctx.extras.get(ASSISTANTS_KEY)
        if resolver is not None:
            found: ResolvedAssistant = await resolver.resolve(assistant_id)
            return found
        if assistant_id in self.ctx.graphs:
            return ResolvedAssistant(assistant_id, assistant_id)
        raise not_found(f"assistant {assistant_id!r}")

    async def _thread_for(self, thread_id: str | None, request: RunRequest, graph_id: str) -> dict[str, Any]:
        if thread_id is None:
            made = await self.threads.create(metadata={"graph_id": graph_id}, graph_id=graph_id)
            return await self.threads.record(made["thread_id"])
        found = await self.records.read(check_thread_id(thread_id))
        if found is None:
            if request.if_not_exists != "create":
                raise not_found(f"thread {thread_id!r}")
            await self.threads.create(
                thread_id=thread_id, metadata={"graph_id": graph_id}, graph_id=graph_id, if_exists="do_nothing"
            )
            found = await self.threads.record(thread_id)
        if found.get("graph_id") not in (None, graph_id):
            raise conflict(f"thread {thread_id!r} runs graph {found['graph_id']!r}, not {graph_id!r}")
        return found

    async def create(self, thread_id: str | None, request: RunRequest) -> dict[str, Any]:
        if request.webhook is not None:  # the project's URL policy, its host resolved (see webhooks.check_webhook)
            await check_webhook(request.webhook, self.ctx.settings.project.webhooks)
        assistant = await self.assistant(request.assistant_id)
        threadless = thread_id is None
        record = await self._thread_for(thread_id, request, assistant.graph_id)
        thread_id = str(record["thread_id"])
        lost = set(lost_runs(record, now(), self.threads.LOST_AFTER))
        active = [r for r in active_runs(record) if r["run_id"] not in lost]
        if active and request.multitask_strategy == "reject":  # busy already: refused without a write
            raise conflict(f"thread {thread_id!r} is busy with run {active[0]['run_id']!r} (multitask_strategy reject)")
        run_id = str(uuid.uuid4())
        at = now()
        run = {
            "run_id": run_id,
            "thread_id": thread_id,
            "assistant_id": assistant.assistant_id,
            "graph_id": assistant.graph_id,
            "created_at": at,
            "updated_at": at,
            "status": "pending",
            "submitted": False,  # until the thread's orchestration has it (see _records.lost_runs)
            "metadata": dict(request.metadata),
            "multitask_strategy": request.multitask_strategy,
            "kwargs": _bounded_kwargs(
                {
                    "input": request.input,
                    "command": request.command,
                    "config": request.config,
                    "context": request.context,
                    "stream_mode": list(request.stream_mode),
                    "interrupt_before": request.interrupt_before,
                    "interrupt_after": request.interrupt_after,
                }
            ),
            "stream_mode": list(request.stream_mode),
            "subgraphs": request.stream_subgraphs,
            "resumable": request.stream_resumable,
            "on_completion": request.on_completion,
            "threadless": threadless,
            **({"webhook": request.webhook} if request.webhook is not None else {}),
            # Where the thread's stream was when an earlier run ended: this run's items all come after it.
            "after": record.get("stream_cursor"),
        }
        # As LangGraph's server does, the thread's metadata names the graph and assistant that last ran on it.
        metadata = {"graph_id": assistant.graph_id, "assistant_id": assistant.assistant_id}
        thread: dict[str, Any] = {"graph_id": assistant.graph_id}
        if not record.get("ttl") and self.ctx.settings.project.thread_ttl:  # a run applies checkpointer.ttl's default
            thread["ttl"] = dict(self.ctx.settings.project.thread_ttl)
        data = {"run": run, "thread": thread, "metadata": metadata, "at": at}
        # The record admits the run or refuses it: it applies a thread's writes one at a time, whichever server
        # sent them, so of runs racing to a thread with ``reject`` exactly one gets in.
        busy = f"thread {thread_id!r} is busy with another run (multitask_strategy reject)"
        admit = {**data, "admit": request.multitask_strategy, "lost_after": self.threads.LOST_AFTER}
        written = await self._admit(thread_id, admit, busy, record)
        runs = written.get("runs") or {}
        await self.threads.cancel_lost(thread_id, runs, run_id)
        await self._supersede(thread_id, runs, run_id, request.multitask_strategy)
        try:
            await self._submit(thread_id, run_id, request, assistant)
        except HttpError as error:
            await self._fail(thread_id, run_id, error.detail)
            raise
        # One-way, and best effort: the run is the orchestration's now. Were the mark lost, a run still queued 30 s
        # on could be taken for lost (ended as ``error``, and cancelled before it runs).
        with contextlib.suppress(Exception):
            await self.client.signal_entity(record_id(thread_id), "submitted", {"run_id": run_id})
        return run_json(run)

    async def _admit(self, thread_id: str, data: dict[str, Any], busy: str, record: dict[str, Any]) -> dict[str, Any]:
        """The record once it admitted the run; 409 when its strategy keeps it out, 404 when the thread is gone.

        A thread whose TTL ran out refuses new runs until its expiry is over: the run then waits for it, and is
        admitted if the thread was kept (pruned, or written to meanwhile), or answered 404 if it was deleted.
        """
        deadline = time.monotonic() + SETTLE_TIMEOUT
        found: dict[str, Any] | None = record
        while True:
            while found is not None and found.get("expiring"):
                if time.monotonic() > deadline:
                    raise HttpError(503, f"thread {thread_id!r} is expiring: try again later")
                await asyncio.sleep(0.05)
                found = await self.records.read(thread_id)
            if found is None:
                raise not_found(f"thread {thread_id!r}")
            try:
                return await self.records.write(thread_id, "run", data, refused=busy) or {}
            except HttpError as refused:
                if refused.status != 409:
                    raise
                found = await self.records.read(thread_id)
                # Refused by a run in flight (``reject``), not by an expiry that has ended meanwhile: 409.
                if (found is not None and active_runs(found)) or time.monotonic() > deadline:
                    raise

    async def _supersede(self, thread_id: str, runs: dict[str, Any], run_id: str, action: str) -> None:
        """Cancel the runs that were in flight when ``interrupt`` or ``rollback`` admitted ``run_id``, as LangGraph's
        server does: every cancel is sent at once (queued runs first, so none starts when the running one ends), then
        awaited; ``rollback`` then forgets those runs."""
        if action not in ("interrupt", "rollback"):
            return
        ahead = [str(r) for r in (runs.get(run_id) or {}).get("supersedes") or ()]
        ahead.sort(key=lambda r: (runs.get(r) or {}).get("status") == "running")
        kind: CancelAction = "rollback" if action == "rollback" else "interrupt"
        sent = [r for r in ahead if await self._send_cancel(thread_id, r, kind)]
        for earlier in sent:
            with contextlib.suppress(HttpError):  # a run deleted meanwhile has ended
                await self.settled(thread_id, earlier)
                if kind == "rollback":
                    await self.records.write(thread_id, "forget_run", {"run_id": earlier})

    async def _submit(self, thread_id: str, run_id: str, request: RunRequest, assistant: ResolvedAssistant) -> None:
        config = _config(request, assistant, thread_id, run_id)
        context = {**dict(assistant.context), **dict(request.context or {})} or None
        value = command_of(dict(request.command)) if request.command is not None else request.input
        async with self.threads.graphs.open(
            assistant.graph_id, "threads.create_run", thread_id=thread_id, context=context
        ) as graph:
            try:
                body = rq.run_body(
                    value,
                    config,
                    stream_modes=list(graph_modes(request.stream_mode)),
                    invoke=False,
                    context=context,
                    interrupt_before=request.interrupt_before,
                    interrupt_after=request.interrupt_after,
                    subgraphs=request.stream_subgraphs,
                )
                extra: dict[str, Any] = {"record": True, "reject_if_busy": request.multitask_strategy == "reject"}
                if request.after_seconds:  # the thread's orchestration waits on a durable timer until then
                    due = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
                        seconds=request.after_seconds
                    )
                    extra["not_before"] = due.isoformat()
                await graph.asubmit("run", {**body, **extra}, config, request_id=run_id)
            except (StateSerializationError, ValueError) as error:
                raise bad_request(str(error)) from None
            except LangGraphError as error:
                raise conflict(str(error)) from None

    async def _fail(self, thread_id: str, run_id: str, message: str) -> None:
        at = now()
        update = {"run_id": run_id, "status": "error", "updated_at": at, "error": message}
        await self.records.write(thread_id, "run", {"run": update, "at": at})

    async def run_record(self, thread_id: str, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        record = await self.threads.record(thread_id)
        run = (record.get("runs") or {}).get(run_id)
        if run is None:
            raise not_found(f"run {run_id!r} of thread {thread_id!r}")
        return record, run

    async def get(self, thread_id: str, run_id: str) -> dict[str, Any]:
        return run_json((await self.run_record(thread_id, run_id))[1])

    async def list(
        self, thread_id: str, *, limit: int = 10, offset: int = 0, status: str | None = None
    ) -> list[dict[str, Any]]:
        record = await self.threads.record(thread_id)
        runs = [r for r in (record.get("runs") or {}).values() if status is None or r.get("status") == status]
        runs.sort(key=lambda r: str(r.get("created_at")), reverse=True)
        return [run_json(r) for r in runs[offset : offset + limit]]

    async def statuses(self, thread_id: str) -> dict[str, Any]:
        record = await self.threads.record(thread_id)
        found = dict(record.get("gone") or {})
        found.update({run_id: run.get("status") for run_id, run in (record.get("runs") or {}).items()})
        return found

    async def delete(self, thread_id: str, run_id: str) -> None:
        _, run = await self.run_record(thread_id, run_id)
        if run.get("status") not in ENDED:
            raise conflict(f"run {run_id!r} is {run.get('status')}: cancel it before deleting it")
        await self.records.write(thread_id, "forget_run", {"run_id": run_id})

    async def cancel(
        self, thread_id: str, run_id: str, *, wait: bool = False, action: CancelAction = "interrupt"
    ) -> None:
        if not await self._send_cancel(thread_id, run_id, action, missing_ok=False):
            return
        if wait or action == "rollback":
            await self.settled(thread_id, run_id)
        if action == "rollback":
            await self.records.write(thread_id, "forget_run", {"run_id": run_id})

    async def _send_cancel(self, thread_id: str, run_id: str, action: CancelAction, *, missing_ok: bool = True) -> bool:
        """Ask the thread's orchestration to end the run; ``False`` when it has ended already (or, with
        ``missing_ok``, is gone)."""
        try:
            record, run = await self.run_record(thread_id, run_id)
        except HttpError as error:
            if missing_ok and error.status == 404:
                return False
            raise
        if run.get("status") in ENDED:
            return False
        graph_id = str(run.get("graph_id") or record.get("graph_id"))
        async with self.threads.graphs.open(graph_id, "threads.update", thread_id=thread_id) as graph:
            body = {"target": run_id, "rollback": action == "rollback"}
            await graph.asubmit("cancel", body, {"configurable": {"thread_id": thread_id}})
        return True

    async def cancel_many(
        self,
        *,
        thread_id: str | None = None,
        run_ids: Sequence[str] | None = None,
        status: Literal["pending", "running", "all"] | None = None,
        action: CancelAction = "interrupt",
    ) -> None:
        if thread_id is not None:
            record = await self.threads.record(thread_id)
            runs = [
                r
                for r in active_runs(record)
                if (run_ids is None or r["run_id"] in run_ids) and status in (None, "all", r.get("status"))
            ]
            for run in runs:
                await self.cancel(thread_id, run["run_id"], action=action)
            return
        if status is None:
            raise bad_request("'status' (pending, running or all) or 'thread_id' with 'run_ids' is required")
        for record in await self.records.all():
            for run in active_runs(record):
                if status == "all" or run.get("status") == status:
                    await self.cancel(str(record["thread_id"]), run["run_id"], action=action)

    async def settled(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """The thread's record once the run's end is in it."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            record, run = await self.run_record(thread_id, run_id)
            if run.get("status") in ENDED or time.monotonic() > deadline:
                return record
            await asyncio.sleep(0.02)

    async def join(self, thread_id: str, run_id: str) -> Any:
        async for _ in self.stream(thread_id, run_id, stream_mode=()):
            pass
        return await self.outcome(await self.settled(thread_id, run_id), run_id)

    async def outcome(self, record: dict[str, Any], run_id: str) -> Any:
        """What waiting for the run returns: the thread's values (with pending interrupts), or its error."""
        run = (record.get("runs") or {}).get(run_id) or {}
        if run.get("status") == "error":
            error_type, _, message = str(run.get("error") or "error: the run failed").partition(": ")
            return {"__error__": {"error": error_type.rsplit(".", 1)[-1], "message": message}}
        thread = await self.threads.full(record)
        values = thread["values"] if thread["values"] is not None else {}
        pending = [i for found in (thread["interrupts"] or {}).values() for i in found]
        if pending and isinstance(values, dict):
            values = {**values, "__interrupt__": pending}
        return values

    async def _ended(self, thread_id: str, run_id: str, instance: str) -> tuple[bool, Any]:
        try:
            _, run = await self.run_record(thread_id, run_id)
        except HttpError:  # the thread (or the run) was deleted meanwhile: its stream is over
            return True, None
        state = await self.ctx.client.get_orchestration_state(instance)
        failed = state is not None and state.runtime_status == OrchestrationStatus.FAILED
        if run.get("status") == "error" or failed:
            details = state.failure_details if state is not None else None
            error = str(run.get("error") or (f"{details.error_type}: {details.message}" if details else "failed"))
            error_type, _, message = error.partition(": ")
            return True, {"error": error_type.rsplit(".", 1)[-1], "message": message}
        terminated = state is not None and state.runtime_status == OrchestrationStatus.TERMINATED
        return run.get("status") in ENDED or terminated, None

    def stream(
        self,
        thread_id: str,
        run_id: str,
        *,
        last_event_id: str | None = None,
        stream_mode: Sequence[str] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        return self._stream(thread_id, run_id, last_event_id, stream_mode)

    async def _stream(
        self, thread_id: str, run_id: str, last_event_id: str | None, stream_mode: Sequence[str] | None
    ) -> AsyncIterator[StreamEvent]:
        after = parse_event_id(last_event_id)
        record, run = await self.run_record(thread_id, run_id)
        graph_id = str(run.get("graph_id") or record.get("graph_id"))
        instance = instance_id(graph_id, thread_id)
        modes = frozenset(run.get("stream_mode") or ()) if stream_mode is None else frozenset(stream_mode)
        view = RunView(run_id, modes, bool(run.get("subgraphs")))

        async def ended() -> tuple[bool, Any]:
            return await self._ended(thread_id, run_id, instance)

        async def note_end(cursor: str) -> None:  # best effort: a later run then reads from here
            with contextlib.suppress(Exception):
                await self.ctx.client.signal_entity(record_id(thread_id), "cursor", {"cursor": cursor})

        metadata = {"run_id": run_id, "attempt": 1}
        events = run_events(
            self.ctx.client,
            instance,
            view,
            ended=ended,
            metadata=metadata,
            after=after,
            start=run.get("after"),
            on_end=note_end,
        )
        async for event in events:
            yield event

    def join_thread(
        self,
        thread_id: str,
        *,
        last_event_id: str | None = None,
        stream_mode: Sequence[str] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        return thread_events(self, thread_id, parse_event_id(last_event_id), stream_mode)
