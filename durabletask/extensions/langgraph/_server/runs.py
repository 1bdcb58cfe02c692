"""The run routes: create, stream and wait (on a thread or threadless), get, list, delete, join, cancel, and the
streams of a run and of a thread (``Last-Event-ID`` resumes them)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from aiohttp import web

from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError, bad_request
from durabletask.extensions.langgraph._server.runs_body import run_request
from durabletask.extensions.langgraph._server.runs_service import RUN_FIELDS, RunServiceImpl, run_json
from durabletask.extensions.langgraph._server.runs_stream import SDK_MODES
from durabletask.extensions.langgraph._server.services import RUNS_KEY, RunRequest, StreamEvent
from durabletask.extensions.langgraph._server.sse import LOOK, send_events
from durabletask.extensions.langgraph._server.threads import install
from durabletask.extensions.langgraph._server.threads_http import (
    answer,
    check_json,
    choice,
    count,
    flag,
    no_content,
    read_body,
    strings,
)

_THREAD_MODES = ("run_modes", "lifecycle", "state_update")
BACKGROUND_KEY = "runs_background"
#: The most runs one ``POST /runs/batch`` creates.
MAX_BATCH = 100


def _created_view(body: RunRequest, run: dict[str, Any], threadless: bool) -> dict[str, Any]:
    """The run just made from ``body``, as ``runs.get`` shows it."""
    kept = {
        "webhook": body.webhook,
        "threadless": threadless,
        "on_completion": body.on_completion,
        "subgraphs": body.stream_subgraphs,
        "resumable": body.stream_resumable,
    }
    return run_json({**run, **kept})


async def cleanup(ctx: ServerContext) -> None:
    """Stop the waits this server keeps for background threadless runs (their threads then stay)."""
    tasks: set[asyncio.Task[None]] = ctx.extras.get(BACKGROUND_KEY, set())
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def run_path(thread_id: str, run_id: str) -> str:
    """The run's path, as ``Content-Location`` names it."""
    return f"/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}"


def _modes(request: web.Request, allowed: Any) -> list[str] | None:
    modes = [m for m in request.query.getall("stream_mode", []) if m]
    for mode in modes:
        if mode not in allowed:
            raise bad_request(f"'stream_mode' {mode!r} is not supported; supported: {', '.join(allowed)}")
    return modes or None


class _Handlers:
    """The handlers, sharing the run service."""

    def __init__(self, ctx: ServerContext) -> None:
        install(ctx)
        self.runs: RunServiceImpl = ctx.extras[RUNS_KEY]
        self.background: set[asyncio.Task[None]] = ctx.extras.setdefault(BACKGROUND_KEY, set())

    async def _delete_when_done(self, body: RunRequest, run: dict[str, Any]) -> None:
        with contextlib.suppress(HttpError):
            await self.runs.join(run["thread_id"], run["run_id"])
        await self._after(body, run)

    @staticmethod
    def _thread(request: web.Request) -> str | None:
        return request.match_info.get("thread_id")

    async def _create(self, request: web.Request) -> tuple[RunRequest, dict[str, Any]]:
        thread_id = self._thread(request)
        body = run_request(await read_body(request), threadless=thread_id is None)
        return body, _created_view(body, await self.runs.create(thread_id, body), thread_id is None)

    async def _after(self, body: RunRequest, run: dict[str, Any]) -> None:
        """A threadless run's thread is deleted once the run has ended, unless ``on_completion`` keeps it."""
        if body.on_completion == "delete":
            with contextlib.suppress(HttpError):
                await self.runs.threads.delete(run["thread_id"])

    async def create(self, request: web.Request) -> web.Response:
        body, run = await self._create(request)
        if self._thread(request) is None and body.on_completion == "delete":
            # Nobody waits for a background threadless run: this server deletes its thread once it has ended.
            self._later(body, run)
        return answer(run, headers={"Content-Location": run_path(run["thread_id"], run["run_id"])})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        body, run = await self._create(request)
        thread_id, run_id = run["thread_id"], run["run_id"]
        path = run_path(thread_id, run_id)

        async def cancel() -> None:
            if body.on_disconnect == "cancel":
                with contextlib.suppress(HttpError):
                    await self.runs.cancel(thread_id, run_id)

        response = await send_events(
            request,
            self.runs.stream(thread_id, run_id),
            resumable=body.stream_resumable,
            headers={"Content-Location": path, "Location": f"{path}/stream"},
            on_disconnect=cancel,
        )
        if body.on_completion == "delete" and request.match_info.get("thread_id") is None:
            await self._after(body, run)
        return response

    async def wait(self, request: web.Request) -> web.Response:
        body, run = await self._create(request)
        thread_id, run_id = run["thread_id"], run["run_id"]
        waiting = asyncio.ensure_future(self.runs.join(thread_id, run_id))
        try:
            while not (await asyncio.wait({waiting}, timeout=LOOK))[0]:
                if request.transport is None or request.transport.is_closing():
                    raise ConnectionResetError("the client closed the connection")
            result = waiting.result()
        except (ConnectionResetError, asyncio.CancelledError) as gone:
            waiting.cancel()
            if body.on_disconnect == "cancel":
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.runs.cancel(thread_id, run_id))
            if isinstance(gone, asyncio.CancelledError):
                raise
            return web.Response(status=204)  # nobody reads it: the client has gone
        if request.match_info.get("thread_id") is None:
            await self._after(body, run)
        path = run_path(thread_id, run_id)
        return answer(result, headers={"Content-Location": path, "Location": f"{path}/join"})

    async def batch(self, request: web.Request) -> web.Response:
        try:
            payloads = json.loads(await request.read() or b"null")
        except (ValueError, UnicodeDecodeError, RecursionError):  # a number too long to read is a ValueError too
            raise bad_request("the request body is not valid JSON (or holds a number too long to read)") from None
        if not isinstance(payloads, list) or not payloads or len(payloads) > MAX_BATCH:
            raise bad_request(f"the request body must be a list of 1 to {MAX_BATCH} runs")
        check_json(payloads)
        asked = []
        for n, payload in enumerate(payloads):
            if not isinstance(payload, dict):
                raise bad_request(f"runs[{n}] must be an object")
            thread_id = payload.get("thread_id")
            if thread_id is not None and not isinstance(thread_id, str):
                raise bad_request(f"runs[{n}].thread_id must be a string")
            fields = {k: v for k, v in payload.items() if k != "thread_id"}
            try:
                asked.append((thread_id, run_request(fields, threadless=thread_id is None)))
            except HttpError as error:
                raise HttpError(error.status, f"runs[{n}]: {error.detail}") from None
        made = []
        for thread_id, body in asked:
            run = _created_view(body, await self.runs.create(thread_id, body), thread_id is None)
            if thread_id is None and body.on_completion == "delete":
                self._later(body, run)
            made.append(run)
        return answer(made)

    def _later(self, body: RunRequest, run: dict[str, Any]) -> None:
        task = asyncio.ensure_future(self._delete_when_done(body, run))
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def list(self, request: web.Request) -> web.Response:
        status = choice(
            dict(request.query), "status", ("pending", "running", "error", "success", "timeout", "interrupted")
        )
        thread_id = request.match_info["thread_id"]
        found = await self.runs.list(
            thread_id,
            limit=count(request.query.get("limit"), "limit", 10),
            offset=count(request.query.get("offset"), "offset", 0, high=1 << 31),
            status=status,
        )
        select = [f for f in request.query.getall("select", []) if f]
        unknown = [f for f in select if f not in RUN_FIELDS]
        if unknown:
            raise bad_request(f"'select' field {unknown[0]!r} is unknown; known: {', '.join(RUN_FIELDS)}")
        return answer([{f: run.get(f) for f in select} for run in found] if select else found)

    async def get(self, request: web.Request) -> web.Response:
        _, run = await self.runs.run_record(request.match_info["thread_id"], request.match_info["run_id"])
        return answer(run_json(run))

    async def delete(self, request: web.Request) -> web.Response:
        await self.runs.delete(request.match_info["thread_id"], request.match_info["run_id"])
        return no_content()

    async def join(self, request: web.Request) -> web.Response:
        thread_id, run_id = request.match_info["thread_id"], request.match_info["run_id"]
        await self.runs.get(thread_id, run_id)
        return answer(await self.runs.join(thread_id, run_id))

    async def join_stream(self, request: web.Request) -> web.StreamResponse:
        thread_id, run_id = request.match_info["thread_id"], request.match_info["run_id"]
        modes = _modes(request, SDK_MODES)
        cancel_on_disconnect = flag(request.query.get("cancel_on_disconnect"), "cancel_on_disconnect")
        _, found = await self.runs.run_record(thread_id, run_id)
        resumable = bool(found.get("resumable"))

        async def cancel() -> None:
            if cancel_on_disconnect:
                with contextlib.suppress(HttpError):
                    await self.runs.cancel(thread_id, run_id)

        events = self.runs.stream(
            thread_id, run_id, last_event_id=request.headers.get("Last-Event-ID"), stream_mode=modes
        )
        return await send_events(request, events, resumable=resumable, on_disconnect=cancel)

    async def cancel(self, request: web.Request) -> web.Response:
        thread_id, run_id = request.match_info["thread_id"], request.match_info["run_id"]
        wait = flag(request.query.get("wait"), "wait")
        action = choice(dict(request.query), "action", ("interrupt", "rollback"), "interrupt")
        await self.runs.cancel(thread_id, run_id, wait=wait, action=action)
        return web.Response(status=202) if not wait else no_content()

    async def cancel_many(self, request: web.Request) -> web.Response:
        body = await read_body(request, required=False)
        action = choice(dict(request.query), "action", ("interrupt", "rollback"), "interrupt")
        thread_id = body.get("thread_id")
        if thread_id is not None and not isinstance(thread_id, str):
            raise bad_request("'thread_id' must be a string")
        await self.runs.cancel_many(
            thread_id=thread_id,
            run_ids=strings(body, "run_ids"),
            status=choice(body, "status", ("pending", "running", "all")),
            action=action,
        )
        return no_content()

    async def thread_stream(self, request: web.Request) -> web.StreamResponse:
        thread_id = request.match_info["thread_id"]
        await self.runs.threads.record(thread_id)
        modes = _modes(request, _THREAD_MODES) or ["run_modes"]
        if modes != ["run_modes"]:
            raise bad_request("'stream_mode' of a thread's stream: only 'run_modes' is supported by this server")
        events: AsyncIterator[StreamEvent] = self.runs.join_thread(
            thread_id, last_event_id=request.headers.get("Last-Event-ID")
        )
        return await send_events(request, events, resumable=True)


def routes(ctx: ServerContext) -> list[web.AbstractRouteDef]:
    """The run routes."""
    h = _Handlers(ctx)
    run = "/threads/{thread_id}/runs/{run_id}"
    return [
        web.post("/threads/{thread_id}/runs", h.create),
        web.post("/threads/{thread_id}/runs/stream", h.stream),
        web.post("/threads/{thread_id}/runs/wait", h.wait),
        web.post("/runs", h.create),
        web.post("/runs/stream", h.stream),
        web.post("/runs/wait", h.wait),
        web.post("/runs/cancel", h.cancel_many),
        web.post("/runs/batch", h.batch),
        web.get("/threads/{thread_id}/runs", h.list),
        web.get(run, h.get),
        web.delete(run, h.delete),
        web.get(f"{run}/join", h.join),
        web.get(f"{run}/stream", h.join_stream),
        web.post(f"{run}/cancel", h.cancel),
        web.get("/threads/{thread_id}/stream", h.thread_stream),
    ]
