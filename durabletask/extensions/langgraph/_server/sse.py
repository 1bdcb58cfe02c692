"""Server-sent events: a run's (or a thread's) events written to an aiohttp response as they come."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server.services import StreamEvent

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
#: Seconds without an event after which a comment line keeps the connection (and proxies) awake.
HEARTBEAT = 15.0
#: Seconds between looks at whether the client is still connected while no event comes.
LOOK = 0.25


def frame(event: StreamEvent, *, with_id: bool) -> bytes:
    """One event as SSE text: ``id:`` (when the stream is resumable), ``event:`` and one ``data:`` line of JSON."""
    data = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
    head = f"id: {event.id}\n" if with_id else ""
    return f"{head}event: {event.event}\ndata: {data}\n\n".encode()


def _closed(request: web.Request) -> bool:
    return request.transport is None or request.transport.is_closing()


async def _pump(
    request: web.Request,
    response: web.StreamResponse,
    events: AsyncIterator[StreamEvent],
    first: asyncio.Task[Any],
    resumable: bool,
) -> None:
    """Write every event as it comes, a heartbeat comment when none has come for a while; raises
    ``ConnectionResetError`` once the client has gone."""
    pending: asyncio.Task[Any] | None = first
    quiet = 0.0
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(events, None))
            done, _ = await asyncio.wait({pending}, timeout=LOOK)
            if not done:
                if _closed(request):
                    raise ConnectionResetError("the client closed the connection")
                quiet += LOOK
                if quiet >= HEARTBEAT:
                    quiet = 0.0
                    await response.write(b": heartbeat\n\n")
                continue
            quiet = 0.0
            event, pending = pending.result(), None
            if event is None:
                return
            await response.write(frame(event, with_id=resumable))
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending


async def send_events(
    request: web.Request,
    events: AsyncIterator[StreamEvent],
    *,
    resumable: bool,
    headers: Mapping[str, str] | None = None,
    on_disconnect: Callable[[], Awaitable[None]] | None = None,
) -> web.StreamResponse:
    """Write ``events`` as an SSE response until they end; ``on_disconnect`` runs if the client goes away first."""
    # A stream that fails at once (a bad Last-Event-ID, a missing run) is answered with its error, not a broken
    # event stream: its first event is awaited briefly before the response starts.
    first: asyncio.Task[Any] = asyncio.ensure_future(anext(events, None))
    await asyncio.wait({first}, timeout=LOOK)
    if first.done() and (failure := first.exception()) is not None:
        raise failure
    response = web.StreamResponse(headers={**SSE_HEADERS, **dict(headers or {})})
    try:
        await response.prepare(request)
        await _pump(request, response, events, first, resumable)
    except ConnectionResetError:  # the client went away: nothing more to write, and nothing wrong to report
        if on_disconnect is not None:
            await asyncio.shield(on_disconnect())
        return response
    except asyncio.CancelledError:
        if on_disconnect is not None:
            await asyncio.shield(on_disconnect())
        raise
    finally:
        closer = getattr(events, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
    with contextlib.suppress(ConnectionResetError):
        await response.write_eof()
    return response
