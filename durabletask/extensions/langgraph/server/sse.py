"""Server-sent events: a run's (or a thread's) events written to an aiohttp response as they come."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph.server.services import StreamEvent

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


async def _next(events: AsyncIterator[StreamEvent], pending: asyncio.Task[Any] | None) -> asyncio.Task[Any]:
    return pending if pending is not None else asyncio.ensure_future(anext(events, None))


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
    pending: asyncio.Task[Any] | None = first
    response = web.StreamResponse(headers={**SSE_HEADERS, **dict(headers or {})})
    await response.prepare(request)
    quiet = 0.0
    try:
        while True:
            pending = await _next(events, pending)
            done, _ = await asyncio.wait({pending}, timeout=LOOK)
            if not done:
                if request.transport is None or request.transport.is_closing():
                    raise ConnectionResetError("the client closed the connection")
                quiet += LOOK
                if quiet >= HEARTBEAT:
                    quiet = 0.0
                    await response.write(b": heartbeat\n\n")
                continue
            quiet = 0.0
            event, pending = pending.result(), None
            if event is None:
                break
            await response.write(frame(event, with_id=resumable))
    except (ConnectionResetError, asyncio.CancelledError):
        if on_disconnect is not None:
            await asyncio.shield(on_disconnect())
        raise
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        closer = getattr(events, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
    with contextlib.suppress(ConnectionResetError):
        await response.write_eof()
    return response
