"""Durable streams: live, resumable output of running orchestrations (docs/streams.md).

Publish with ``ctx.publish(value, topic="default")`` in an orchestrator or an activity; read with
``client.subscribe(instance_id)`` (``async for`` on the async client); serve to browsers with :func:`sse`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from typing import Any

from durabletask._streams.reader import StreamTimeoutError
from durabletask._streams.wire import (
    DEFAULT_MAX_INSTANCE_BYTES,
    DEFAULT_TOPIC,
    DROPPED_TOPIC,
    MAX_ITEM_BYTES,
    MAX_TURN_BYTES,
    PublishError,
    StreamCursorError,
    StreamError,
    StreamItem,
    StreamNotFoundError,
)
from durabletask.client import AsyncTaskHubGrpcClient, TaskHubGrpcClient

__all__ = [
    "DEFAULT_MAX_INSTANCE_BYTES",
    "DEFAULT_TOPIC",
    "DROPPED_TOPIC",
    "END_EVENT",
    "MAX_ITEM_BYTES",
    "MAX_TURN_BYTES",
    "SSE_HEADERS",
    "PublishError",
    "StreamCursorError",
    "StreamError",
    "StreamItem",
    "StreamNotFoundError",
    "StreamTimeoutError",
    "format_frame",
    "sse",
]

#: The event name of the last frame, sent once the instance has ended and every item was sent: a browser's
#: ``EventSource`` should close on it (it would otherwise reconnect when the response ends).
END_EVENT = "$end"
#: Response headers for a ``text/event-stream`` response (no caching, no proxy buffering).
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    to_dict = getattr(value, "__dict__", None)
    if to_dict is not None:
        return to_dict
    raise TypeError(f"cannot write {type(value).__name__} into an event-stream frame")


def format_frame(item: StreamItem) -> str:
    """One ``text/event-stream`` frame: ``id:`` is the item's cursor, ``event:`` its topic, ``data:`` JSON.

    The data is ``{"topic", "data", "time", "task_id", "attempt"}``, so a page can tell an activity's attempts apart.

    Args:
        item: The published item.

    Raises:
        TypeError: The item's data holds a value JSON cannot express.
    """
    body = {
        "topic": item.topic,
        "data": item.data,
        "time": item.time.isoformat(),
        "task_id": item.task_id,
        "attempt": item.attempt,
    }
    data = json.dumps(body, default=_default, separators=(",", ":"))
    return f"id: {item.id}\nevent: {item.topic}\ndata: {data}\n\n"


def _end_frame() -> str:
    return f"event: {END_EVENT}\ndata: {{}}\n\n"


def sse(
    client: AsyncTaskHubGrpcClient | TaskHubGrpcClient,
    instance_id: str,
    *,
    last_event_id: str | None = None,
    topics: Sequence[str] | None = None,
    timeout: float | None = None,
    heartbeat: float = 15.0,
) -> AsyncIterator[bytes]:
    """An instance's items as ``text/event-stream`` frames (bytes), for a streaming HTTP response.

    Pass the request's ``Last-Event-ID`` header as ``last_event_id``: a reconnecting browser then gets exactly the
    items after the last one it received. A comment line is sent after ``heartbeat`` seconds without an item, so
    proxies keep the connection open; an ``event: $end`` frame ends the stream.

    Starlette / FastAPI::

        StreamingResponse(sse(client, id, last_event_id=request.headers.get("last-event-id")),
                          headers=SSE_HEADERS)

    aiohttp: prepare a ``web.StreamResponse(headers=SSE_HEADERS)`` and ``await response.write(frame)`` for each.

    Args:
        client: A sync or asyncio client (a sync client's iteration runs on worker threads).
        instance_id: The orchestration instance whose items to stream.
        last_event_id: Resume after this cursor; ``None`` or empty starts from the first item.
        topics: Only items of these topics; all topics when ``None``.
        timeout: Seconds after which waiting for more items ends the subscription with ``TimeoutError``.
        heartbeat: Seconds without an item after which a comment line is sent.

    Raises:
        StreamCursorError: ``last_event_id`` is malformed or belongs to another instance (at the call: answer 400).
        ValueError: ``heartbeat`` is not above zero.
    """
    if heartbeat <= 0:
        raise ValueError(f"heartbeat: expected seconds > 0, got {heartbeat!r}")
    last_event_id = last_event_id or None  # an empty header means "from the start"
    if isinstance(client, AsyncTaskHubGrpcClient):
        items: AsyncIterator[StreamItem] = client.subscribe(instance_id, topics, last_event_id, timeout)
    else:
        items = _in_threads(client.subscribe(instance_id, topics, last_event_id, timeout))
    return _frames(items, heartbeat)


async def _in_threads(items: Iterator[StreamItem]) -> AsyncIterator[StreamItem]:
    """A blocking iterator read on worker threads, so the event loop is never held up."""
    done = object()
    while True:
        item = await asyncio.to_thread(next, items, done)
        if item is done:
            return
        assert isinstance(item, StreamItem)
        yield item


async def _frames(items: AsyncIterator[StreamItem], heartbeat: float) -> AsyncIterator[bytes]:
    iterator = aiter(items)
    pending: asyncio.Future[StreamItem] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=heartbeat)
            if not done:
                yield b": keep-alive\n\n"
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                yield _end_frame().encode("utf-8")
                return
            pending = None
            yield format_frame(item).encode("utf-8")
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
