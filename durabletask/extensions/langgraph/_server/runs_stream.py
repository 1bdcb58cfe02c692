"""A thread's durable stream read back as the SSE events of its runs, with IDs any server can resume after.

The thread's orchestration publishes each run's chunks and result on the instance's stream (``_delivery``); this
module puts each run's pieces together again and names the events as LangGraph's server does (``metadata``,
``values``, ``updates|ns``, ``messages/partial``, ``error``, ``end``). An event's ID is ``{offset}.{k}``: the
offset of the stream item that completed it and its rank among that item's events. The events are a pure
function of the stream, so reading again from the start gives the same events with the same IDs everywhere, and
resuming after an ID skips exactly the events up to it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from durabletask.client import AsyncTaskHubGrpcClient, NotFoundError
from durabletask.extensions.langgraph._delivery import TOPIC, Assembly
from durabletask.extensions.langgraph._server.errors import bad_request
from durabletask.extensions.langgraph._server.services import StreamEvent
from durabletask.extensions.langgraph._server.state import to_json
from durabletask.streams import StreamNotFoundError

#: The stream modes of the SDK, and the LangGraph mode each needs from the run.
SDK_MODES = {
    "values": "values",
    "updates": "updates",
    "custom": "custom",
    "checkpoints": "checkpoints",
    "tasks": "tasks",
    "debug": "debug",
    "messages": "messages",
    "messages-tuple": "messages",
    "events": "events",
}
#: Seconds between looks at a thread whose execution has ended, while a run of it may still come.
IDLE_LOOK = 0.25
Key = tuple[int, int]
FROM_START: Key = (-2, 0)
# An event ID: the item's offset and the event's rank, in ASCII digits ("12.0"); a bare offset means its last event.
_EVENT_ID = re.compile(r"(-?[0-9]{1,15})(?:\.([0-9]{1,9}))?")
#: The rank of a failed run's ``error`` (and then ``end``) after the events of the item that said it failed.
FAILED_RANK = 1 << 20
METADATA_KEY: Key = (-1, 0)


def graph_modes(modes: Collection[str]) -> tuple[str, ...]:
    """The LangGraph stream modes a run publishes for the SDK's ``modes``."""
    return tuple(dict.fromkeys(SDK_MODES[m] for m in modes))


def parse_event_id(value: str | None) -> Key | None:
    """Where to resume: ``None`` (live from now), or the key after which events are sent (``-1``: the start)."""
    if value is None:
        return None
    text = value.strip()
    if text in ("-1", "0", ""):
        return FROM_START
    found = _EVENT_ID.fullmatch(text)
    if found is None:
        shown = value if len(value) <= 40 else f"{value[:40]}... ({len(value)} characters)"
        raise bad_request(f"'Last-Event-ID' {shown!r} is not an event ID of this server (expected e.g. '12.0')")
    offset, rank = found.group(1), found.group(2)
    return (int(offset), int(rank)) if rank is not None else (int(offset), 1 << 30)


def event_id(key: Key) -> str:
    return f"{key[0]}.{key[1]}"


def _offset(cursor: str) -> int:
    return int(cursor.partition("-")[0])


@dataclass
class _Messages:
    """The ``messages`` mode's bookkeeping: each message's chunks so far, and which ones were announced."""

    seen: dict[str, Any] = field(default_factory=dict)

    def events(self, message: Any, metadata: Any, suffix: str) -> list[tuple[str, Any]]:
        msg_id = str(getattr(message, "id", None) or "")
        out: list[tuple[str, Any]] = []
        if msg_id not in self.seen:
            out.append((f"messages/metadata{suffix}", {msg_id: {"metadata": to_json(metadata)}}))
        if type(message).__name__.endswith("Chunk"):
            before = self.seen.get(msg_id)
            self.seen[msg_id] = message if before is None else before + message
            out.append((f"messages/partial{suffix}", [to_json(self.seen[msg_id])]))
        else:
            self.seen[msg_id] = message
            out.append((f"messages/complete{suffix}", [to_json(message)]))
        return out


@dataclass
class RunView:
    """One run's events out of its chunks: the SDK modes asked, subgraphs or not."""

    run_id: str
    modes: frozenset[str]
    subgraphs: bool
    assembly: Assembly = field(init=False)
    messages: _Messages = field(default_factory=_Messages)
    ended: bool = False
    failed_at: int | None = None  # the offset of the item that said the run failed
    attempt: int = 1

    @property
    def failed(self) -> bool:
        return self.failed_at is not None

    def __post_init__(self) -> None:
        self.assembly = Assembly(self.run_id)

    def chunk_events(self, chunk: Any) -> list[tuple[str, Any]]:
        ns, mode, payload = chunk
        if ns and not self.subgraphs:
            return []
        suffix = "|" + "|".join(ns) if ns else ""
        if mode == "messages":
            message, metadata = payload
            out: list[tuple[str, Any]] = []
            if "messages-tuple" in self.modes:
                out.append((f"messages{suffix}", [to_json(message), to_json(metadata)]))
            if "messages" in self.modes:
                out.extend(self.messages.events(message, metadata, suffix))
            return out
        return [(f"{mode}{suffix}", to_json(payload))] if mode in self.modes else []

    def feed(self, data: Any, task_id: int | None, attempt: int | None, offset: int = 0) -> list[tuple[str, Any]]:
        """This run's events that a stream item completes (its result ends the run)."""
        if isinstance(data, dict) and data.get("k") == "failed" and data.get("r") == self.run_id:
            self.failed_at = offset
            return []
        out: list[tuple[str, Any]] = []
        if isinstance(data, dict) and data.get("r") == self.run_id and attempt is not None and attempt > self.attempt:
            # A task of the run runs again (its worker died, or it is retried): the run's attempt, as LangGraph's
            # server reports a run taken over by another worker.
            self.attempt = attempt
            out.append(("metadata", {"run_id": self.run_id, "attempt": attempt}))
        out += [event for chunk in self.assembly.feed(data, task_id, attempt) for event in self.chunk_events(chunk)]
        result = self.assembly.result
        if result is not None and not self.ended:
            self.ended = True
            refused = result.get("refused")
            if refused:
                out.append(("error", {"error": refused["type"], "message": refused["message"]}))
        return out


async def thread_items(
    client: AsyncTaskHubGrpcClient, instance_id: str, after: str | None = None
) -> AsyncIterator[Any]:
    """The items of a thread's stream after ``after`` (from its start when ``None``); ``None`` each time the thread's
    execution has ended and all of its items were delivered (the caller decides whether to wait on), then the
    items of the next execution."""
    cursor = after
    while True:
        try:
            async for item in client.subscribe(instance_id, topics=[TOPIC], after=cursor):
                cursor = item.id
                yield item
        except (StreamNotFoundError, NotFoundError):  # purged (the thread deleted), or not made yet
            pass
        yield None
        await asyncio.sleep(IDLE_LOOK)


async def run_events(
    client: AsyncTaskHubGrpcClient,
    instance_id: str,
    view: RunView,
    *,
    ended: Callable[[], Any],
    metadata: dict[str, Any],
    after: Key | None,
    start: str | None = None,
    on_end: Callable[[str], Any] | None = None,
) -> AsyncIterator[StreamEvent]:
    """One run's events: ``metadata``, its chunks' events, ``error`` if it failed, then ``end``.

    ``ended()`` (awaited once the run failed, and whenever the thread's execution has ended) returns
    ``(done, error)``: whether the run is over though its result never came (it failed, or its thread was ended)
    and the error to report. ``start`` is a stream cursor before the run's first item (the events do not depend
    on it); ``on_end`` is awaited with the cursor of the run's result.
    """
    skip = after if after is not None else FROM_START
    if skip < METADATA_KEY:
        yield StreamEvent(event_id(METADATA_KEY), "metadata", metadata)
    last: Key = METADATA_KEY
    error: Any = None
    async for item in thread_items(client, instance_id, start):
        if item is not None:
            offset = _offset(item.id)
            for rank, (name, data) in enumerate(view.feed(item.data, item.task_id, item.attempt, offset)):
                last = (offset, rank)
                if last > skip:
                    yield StreamEvent(event_id(last), name, data)
            if view.ended and on_end is not None:
                await on_end(item.id)
            if view.ended or view.failed_at is None:
                if view.ended:
                    break
                continue
        done, error = await ended()
        if done:
            break
    tail = [("error", error), ("end", None)] if error is not None else [("end", None)]
    base = (view.failed_at, FAILED_RANK) if view.failed_at is not None else (last[0], last[1] + 1)
    for rank, (name, data) in enumerate(tail):
        key = (base[0], base[1] + rank)
        if key > skip:
            yield StreamEvent(event_id(key), name, data)
