"""How a thread's results and stream chunks reach its client: items of the instance's durable stream.

The orchestrator publishes each request's result, and a streaming run's loop chunks (``values``, ``updates``,
...) once per superstep; a node's activity publishes its ``custom`` and ``messages`` chunks while it runs. Every
message is JSON text cut into pieces that each fit in one stream item, so a message of any size travels; the
orchestrator spreads its pieces over as many turns as the per-turn limit needs. The client puts the pieces
together again (:class:`Assembly`), per producer, and yields an activity's chunks only after the orchestrator's
chunks that LangGraph emits before them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from durabletask.extensions.langgraph._errors import StateSerializationError
from durabletask.extensions.langgraph._events import EVENTS, writable
from durabletask.extensions.langgraph._serde import dump, load

#: The topic of every item the integration publishes.
TOPIC = "langgraph"
#: Characters of message text per item: with JSON escaping at worst doubling them, far below 64 KiB an item.
PIECE = 30_000
#: What the orchestrator publishes per turn at most, below the stream's 512 KiB (sizes are estimated high).
TURN_BUDGET = 448 * 1024
#: The metadata key a ``messages`` chunk of a retried activity attempt carries (absent on a first attempt).
ATTEMPT_KEY = "durabletask_attempt"

Chunk = tuple[tuple[str, ...], str, Any]


def pieces(request_id: str, kind: str, seq: int, message: dict[str, Any]) -> list[dict[str, Any]]:
    """The item values carrying ``message``: ``kind`` is ``chunks`` (orchestrator), ``chunk`` (activity),
    ``result``, or ``failed`` (the checkpoints of a run that failed, which the thread starts again from)."""
    text = json.dumps(message, separators=(",", ":"))
    cuts = range(0, max(len(text), 1), PIECE)
    return [
        {"r": request_id, "k": kind, "s": seq, "t": text[at : at + PIECE], "more": at + PIECE < len(text)}
        for at in cuts
    ]


def _size(value: dict[str, Any]) -> int:
    # The item as the stream counts it: encoded once by the data converter, then again inside the batch.
    return len(json.dumps(json.dumps(value))) + 128


class Outbox:
    """The orchestrator's publishing, kept under the per-turn limit the same way on every replay.

    A turn is recognised by the orchestration's clock: a different time is surely a new turn, the same time is
    counted as the same turn (never too little). When a message would pass the budget, a timer due now starts a
    new turn. Every decision depends on replayed values only, so replays take the same path.
    """

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.turn: datetime | None = None
        self.used = 0

    def send(self, request_id: str, kind: str, seq: int, message: dict[str, Any]) -> Generator[Any, Any, None]:
        for value in pieces(request_id, kind, seq, message):
            size = _size(value)
            if self.ctx.current_utc_datetime != self.turn:
                self.turn, self.used = self.ctx.current_utc_datetime, 0
            if self.used and self.used + size > TURN_BUDGET:
                yield self.ctx.create_timer(self.ctx.current_utc_datetime)
                self.turn, self.used = self.ctx.current_utc_datetime, 0
            self.ctx.publish(value, topic=TOPIC)
            self.used += size


def activity_publisher(ctx: Any, live: dict[str, Any], errors: list[BaseException]) -> Callable[[Chunk], None]:
    """What a node's task calls with each chunk it emits: publish it now, for the request ``live`` names.

    A chunk that cannot be written is kept in ``errors`` (the task raises it once the node has finished), so the
    node's own code never sees the stream's errors; an ``events`` chunk goes out with what cannot be written as
    ``None`` instead (``_events``).
    """

    def publish(chunk: Chunk) -> None:
        try:
            try:
                message = {"c": dump(chunk, "a stream chunk")}
            except StateSerializationError:
                if chunk[1] != EVENTS:
                    raise
                event = writable(chunk[2], lambda value: dump(value, "an event's value"))
                message = {"c": dump((chunk[0], chunk[1], event), "a stream chunk")}
            for value in pieces(live["r"], "chunk", live["s"], message):
                ctx.publish(value, topic=TOPIC)
        except Exception as error:  # raised after the node has run, as a failure of the task
            errors.append(error)

    return publish


def _joined(parts: dict[Any, list[str]], data: dict[str, Any], producer: Any) -> dict[str, Any] | None:
    """The message an item completes (its producer's pieces so far, joined), or ``None`` while more are due."""
    parts.setdefault(producer, []).append(str(data["t"]))
    if data.get("more"):
        return None
    message: dict[str, Any] = json.loads("".join(parts.pop(producer)))
    return message


@dataclass
class LastFailure:
    """The checkpoints the thread's last failed run left on its stream (``carry``, once read)."""

    carry: dict[str, Any] | None = None
    parts: dict[Any, list[str]] = field(default_factory=dict)

    def feed(self, data: Any) -> None:
        if isinstance(data, dict) and data.get("k") == "failed":
            message = _joined(self.parts, data, data.get("r"))
            self.carry = message if message is not None else self.carry


@dataclass
class Assembly:
    """The client's side: one request's items in, its chunks (in LangGraph's order) and its result out."""

    request_id: str
    result: dict[str, Any] | None = None
    seen: int = 0  # the orchestrator's last chunks message delivered
    parts: dict[Any, list[str]] = field(default_factory=dict)
    held: list[tuple[int, Chunk]] = field(default_factory=list)

    def feed(self, data: Any, task_id: int | None, attempt: int | None) -> list[Chunk]:
        """The chunks ready to yield once this item's data is in (``result`` is set when the result is)."""
        if not isinstance(data, dict) or data.get("r") != self.request_id or data.get("k") == "failed":
            return []
        message = _joined(self.parts, data, (task_id, attempt))
        if message is None:
            return []
        kind, seq = data["k"], int(data["s"])
        if kind == "result":
            self.result = message
            return []
        if kind == "chunks":
            self.seen = seq
            ready: list[Chunk] = [(tuple(ns), mode, payload) for ns, mode, payload in load(message["c"])]
            released = [chunk for after, chunk in self.held if after <= seq]
            self.held = [(after, chunk) for after, chunk in self.held if after > seq]
            return [*ready, *released]
        chunk = _with_attempt(tuple(load(message["c"])), attempt)
        if seq > self.seen:  # the orchestrator's chunks before this task have not arrived yet
            self.held.append((seq, chunk))
            return []
        return [chunk]


def _with_attempt(chunk: Chunk, attempt: int | None) -> Chunk:
    """A retried attempt's ``messages`` chunk says which attempt it is, in its metadata."""
    ns, mode, payload = chunk
    pair = isinstance(payload, (tuple, list)) and len(payload) == 2
    if attempt is None or attempt <= 1 or mode != "messages" or not pair:
        return (tuple(ns), mode, payload)
    message, metadata = payload
    return (tuple(ns), mode, (message, {**(metadata or {}), ATTEMPT_KEY: attempt}))
