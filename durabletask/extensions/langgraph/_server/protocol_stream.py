"""A thread's protocol events, numbered from its durable stream, over SSE and over WebSocket.

Every event's ``seq`` is its position among the protocol events of the thread's whole stream (the runs' chunks, read
again from the start of the thread's durable stream and translated the same way each time), so any server gives the
same numbers and ``since`` (or ``Last-Event-ID``) resumes exactly after an event, whichever server sent it.

Where a request names no ``since``, it starts at the thread's newest run (the one just started, or the one a client
attaches to), so a stream opened right after ``run.start`` misses nothing of that run, however fast it ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server import protocol_events as pe
from durabletask.extensions.langgraph._server.errors import HttpError
from durabletask.extensions.langgraph._server.protocol_commands import Filter, ProtocolError, parse_filter
from durabletask.extensions.langgraph._server.services import RunService, StreamEvent, ThreadService
from durabletask.extensions.langgraph._server.sse import send_events

#: The most runs of one thread whose statuses a stream reads at once.
MAX_RUNS = 10_000
#: Seconds a run's end waits for the run's record to show its final status (it is written just after).
RECORD_LAG = 3.0
#: Seconds between looks, at most, for a thread a stream waits for (one subscribed to before it was created).
THREAD_LOOK = 0.5
_log = logging.getLogger("durabletask.langgraph.server.protocol")


def since_of(body: Mapping[str, Any], last_event_id: str | None) -> Filter:
    """The filter of an event-stream request: its body, and ``Last-Event-ID`` (an event's ``seq``; ``-1``: from the
    start) when it has no ``since``.

    Raises:
        ProtocolError: ``invalid_argument`` naming the field.
    """
    wanted = parse_filter(body, "body")
    if last_event_id == "-1":  # LangGraph's "from the start"
        last_event_id = "0"
    if wanted.since is None and last_event_id:
        if not last_event_id.isdigit() or len(last_event_id) > 16:
            raise ProtocolError(
                "invalid_argument", f"Last-Event-ID: expected an event's seq (digits), got {last_event_id[:40]!r}"
            )
        wanted = Filter(wanted.channels, wanted.namespaces, wanted.depth, int(last_event_id))
    return wanted


class ThreadEvents:
    """Reads a thread's runs through the run service and yields its protocol events for a filter."""

    def __init__(self, runs: RunService, threads: ThreadService) -> None:
        self.runs = runs
        self.threads = threads

    async def older_runs(self, thread_id: str) -> frozenset[str] | None:
        """The IDs of the thread's runs older than its newest: a stream without ``since`` starts at the first run
        not among them (the newest one, or a later one if the newest never runs). ``None`` when the thread has no
        run, or does not exist yet (a client that minted the thread's ID subscribes before its ``run.start``
        creates it: the stream then waits for the thread and starts at its beginning)."""
        try:
            runs = await self.runs.list(thread_id, limit=MAX_RUNS)
        except HttpError as error:
            if error.status != 404:
                raise
            return None
        return frozenset(str(run["run_id"]) for run in runs[1:]) if runs else None

    async def events(
        self, thread_id: str, wanted: Filter, older: frozenset[str] | None
    ) -> AsyncIterator[dict[str, Any]]:
        """The events ``wanted`` receives: after ``wanted.since``, or else from the start of the first run not in
        ``older`` (from the thread's start when ``None``), live until the caller stops iterating."""
        delivering = wanted.since is not None or older is None
        async for seq, body in self._numbered(thread_id):
            if not delivering and _starts_newer(body, older or frozenset()):
                delivering = True
            if wanted.since is not None and seq <= wanted.since:
                continue
            if delivering and pe.matches(body, wanted):
                yield pe.event(body, seq, int(time.time() * 1000))

    async def _exists(self, thread_id: str) -> None:
        """Returns once the thread exists (at once, mostly; after its ``run.start`` for a stream opened before)."""
        pause = 0.05
        while True:
            try:
                await self.threads.get(thread_id)
                return
            except HttpError as error:
                if error.status != 404:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, THREAD_LOOK)

    async def _numbered(self, thread_id: str) -> AsyncIterator[tuple[int, pe.Body]]:
        await self._exists(thread_id)
        translator, statuses = pe.Translator(), _Statuses(self.runs, thread_id)
        seq = 0
        stream = self.runs.join_thread(thread_id, last_event_id="-1", stream_mode=list(pe.RUN_MODES))
        other: str | None = None  # a request on the thread's stream that is not a run, until its end
        try:
            async for item in stream:
                part = pe.part_of(item.event, item.data)
                if part is None:
                    continue
                if part.kind == "run" and not await statuses.is_run(part):
                    # The thread's stream also answers its state reads and updates; the run service may report
                    # them as runs (a start, then an end): they are no run's events.
                    other = str(part.data.get("run_id"))
                    continue
                if part.kind in ("end", "error") and other is not None:
                    other = None if part.kind == "end" else other
                    continue
                if part.kind == "end":
                    part = await statuses.ended(translator.run_id)
                for body in translator.feed(part):
                    seq += 1
                    yield seq, body
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]


class _Statuses:
    """The thread's runs' statuses, read once per new run ID rather than once per event (a whole thread is read
    again each time a client connects)."""

    def __init__(self, runs: RunService, thread_id: str) -> None:
        self.runs = runs
        self.thread_id = thread_id
        self.known: dict[str, Any] = {}

    async def _load(self) -> None:
        # Runs deleted since stay runs here, with the status they had: the events' numbers never change.
        try:
            self.known = await self.runs.statuses(self.thread_id)
        except HttpError as error:
            if error.status != 404:
                raise
            self.known = {}

    async def is_run(self, part: pe.Part) -> bool:
        run_id = part.data.get("run_id") if isinstance(part.data, Mapping) else None
        if run_id is not None and str(run_id) not in self.known:
            await self._load()
        return run_id is not None and str(run_id) in self.known

    async def ended(self, run_id: str | None) -> pe.Part:
        """The run's end with its final status (the run's record may lag its last event a moment)."""
        pause, waited = 0.05, 0.0
        if run_id is not None and self.known.get(run_id) in (None, "pending", "running"):
            await self._load()
        status = self.known.get(run_id or "")  # None: a run deleted since, whose end still ends it
        while run_id is not None and status in ("pending", "running") and waited < RECORD_LAG:
            await asyncio.sleep(pause)
            waited += pause
            pause = min(pause * 2, 0.5)
            await self._load()
            status = self.known.get(run_id)
        return pe.Part("end", (), {"status": status or "success"})


def _starts_newer(body: pe.Body, older: frozenset[str]) -> bool:
    data = body.data if isinstance(body.data, Mapping) else {}
    started = body.method == "lifecycle" and not body.namespace and data.get("event") == "running"
    return started and data.get("run_id") not in older


def error_event(message: str) -> dict[str, Any]:
    """What a stream sends last when reading the thread failed (langgraph-sdk logs it, then reopens the stream)."""
    return {"type": "error", "id": None, "error": "unknown_error", "message": message}


async def _as_sse(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[StreamEvent]:
    try:
        async for item in events:
            yield StreamEvent(str(item["seq"]), "message", item)
    except (ConnectionError, asyncio.CancelledError):
        raise
    except Exception as error:
        _log.exception("reading a thread's events failed")
        message = f"reading the thread's events failed: {type(error).__name__}"
        yield StreamEvent("", "error", error_event(message))


async def serve_sse(
    request: web.Request, source: ThreadEvents, thread_id: str, wanted: Filter, older: frozenset[str] | None
) -> web.StreamResponse:
    """Writes the events as SSE (``id:`` their ``seq``) until the client goes away."""
    response = web.StreamResponse()
    with contextlib.suppress(ConnectionError):
        response = await send_events(request, _as_sse(source.events(thread_id, wanted, older)), resumable=True)
    return response
