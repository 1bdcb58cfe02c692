"""A subscription as a sans-IO plan: the reads it needs, the pauses between them and the items it delivers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from durabletask import history
from durabletask._instance_models import OrchestrationState, OrchestrationStatus
from durabletask._streams import wire
from durabletask.entities.entity_instance_id import EntityInstanceId

#: The first pause after a read that found nothing new, and the longest one (the pause doubles in between),
#: against a backend that cannot hold a read open until the stream changes.
FIRST_PAUSE = 0.02
LONGEST_PAUSE = 0.5
#: How long one held read of the head waits at most, against a backend that holds reads (our emulator).
HOLD_SECONDS = 10.0

_TERMINAL = frozenset(
    {
        OrchestrationStatus.COMPLETED,
        OrchestrationStatus.FAILED,
        OrchestrationStatus.TERMINATED,
    }
)


@dataclass(frozen=True, slots=True)
class ReadStatus:
    """Read the instance's state (``None`` if it does not exist); send back an ``OrchestrationState``."""


@dataclass(frozen=True, slots=True)
class ReadEntity:
    """Read an entity's state; send back its decoded state (``None`` if it does not exist)."""

    entity: EntityInstanceId


@dataclass(frozen=True, slots=True)
class ReadHead:
    """Read the stream's head; send back a ``HeadRead``.

    With ``seen`` (the version an earlier read returned) and ``wait`` > 0, a backend that can hold the read
    answers once the head has moved past ``seen``, the instance has ended (with ``until_end``), or ``wait``
    seconds have passed; one that cannot answers at once.
    """

    entity: EntityInstanceId
    seen: str | None = None
    wait: float = 0.0
    until_end: bool = False


@dataclass(frozen=True, slots=True)
class HeadRead:
    """The head's decoded state (``None``: no items yet) and its version (``None``: the backend holds no reads)."""

    state: dict[str, Any] | None
    version: str | None


@dataclass(frozen=True, slots=True)
class ReadHistory:
    """Read the instance's history; send back the list of ``history.HistoryEvent``."""


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait this long (the shell may return earlier, never later)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Deliver:
    """Hand this item to the subscriber."""

    item: wire.StreamItem


Step = ReadStatus | ReadHead | ReadEntity | ReadHistory | Sleep | Deliver
Plan = Generator[Step, Any, None]


class StreamTimeoutError(wire.StreamError, TimeoutError):
    """The subscription's ``timeout`` passed before the instance ended and its items were all delivered."""


def is_terminal(state: OrchestrationState) -> bool:
    return state.runtime_status in _TERMINAL


def orchestrator_batches(events: Sequence[history.HistoryEvent]) -> tuple[str, int]:
    """The current execution's ID and the number of its last stream batch recorded in ``events`` (0: none)."""
    execution_id = ""
    last = 0
    for event in events:
        if isinstance(event, history.ExecutionStartedEvent) and event.orchestration_instance is not None:
            execution_id = event.orchestration_instance.execution_id or ""
        elif isinstance(event, history.EntityOperationSignaledEvent) and wire.is_head(event.target_instance_id or ""):
            batch = json.loads(event.input or "{}")
            last = max(last, int(batch.get("s", 0)))
    return execution_id, last


class _Position:
    """Where a subscriber is: the last offset delivered and the topics it wants."""

    def __init__(self, instance_id: str, after: str | None, topics: Sequence[str] | None) -> None:
        self.instance_id = instance_id
        self.offset = wire.parse_cursor(instance_id, after)
        if isinstance(topics, str):
            raise TypeError("topics: expected a list of topic names, got a single string")
        self.topics = None if topics is None else frozenset(topics)

    def item(self, stored: list[Any], decode: Callable[[str | None], Any]) -> wire.StreamItem | None:
        offset, topic, encoded, when, task_id, attempt = stored
        self.offset = offset
        if self.topics is not None and topic not in self.topics:
            return None
        return wire.StreamItem(
            wire.make_cursor(self.instance_id, offset), topic, decode(encoded), wire.parse_time(when), task_id, attempt
        )

    def dropped(self, first: int) -> wire.StreamItem | None:
        """The marker for items dropped before ``first`` that this subscriber has not seen."""
        if self.offset + 1 >= first:
            return None
        count = first - (self.offset + 1)
        self.offset = first - 1
        data = {"dropped": count, "reason": "the instance's items exceeded its retention cap"}
        now = datetime.now(timezone.utc)
        return wire.StreamItem(wire.make_cursor(self.instance_id, first - 1), wire.DROPPED_TOPIC, data, now)


def subscription(
    instance_id: str,
    *,
    topics: Sequence[str] | None,
    after: str | None,
    timeout: float | None,
    decode: Callable[[str | None], Any],
    clock: Callable[[], float] = time.monotonic,
) -> Plan:
    """Every item of ``instance_id`` after ``after``, in order, until the instance has ended and all are delivered.

    The arguments are checked now (a bad cursor raises here); the plan does its I/O once it is driven.
    """
    if not isinstance(instance_id, str) or not instance_id:
        raise ValueError(f"instance_id: expected a non-empty string, got {instance_id!r}")
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout: expected seconds >= 0 or None, got {timeout!r}")
    position = _Position(instance_id, after, topics)
    return _plan(position, timeout, decode, clock)


def _plan(
    position: _Position, timeout: float | None, decode: Callable[[str | None], Any], clock: Callable[[], float]
) -> Plan:
    instance_id = position.instance_id
    deadline = None if timeout is None else clock() + timeout
    state = yield ReadStatus()
    if state is None:
        raise wire.StreamNotFoundError(f"subscribe: no orchestration instance '{instance_id}' exists")
    barrier: tuple[str, int] | None = None  # (execution ID, last orchestrator batch) once the instance ended
    pause = FIRST_PAUSE
    wait = 0.0
    version: str | None = None
    while True:
        read = yield ReadHead(wire.head_entity(instance_id), version if wait else None, wait, barrier is None)
        head, version = read.state, read.version
        progressed, blocked = yield from _deliver(position, head, decode)
        left = None if deadline is None else deadline - clock()
        # Against a backend that holds reads, every next read of the head waits there for a change (answered at
        # once if the head moved meanwhile); against one that does not, reads go on at once while they find items.
        # A sealed segment not stored yet is waited for by polling: storing it does not change the head.
        wait = _hold(left) if version is not None and not blocked else 0.0
        if barrier is not None and _reached(head, barrier) and position.offset + 1 >= (head or {}).get("next", 0):
            return
        if progressed:
            pause = FIRST_PAUSE
            if not blocked:
                continue
        if barrier is None and not blocked:
            state = yield ReadStatus()
            if state is None:
                raise wire.StreamNotFoundError(f"subscribe: the instance '{instance_id}' was purged")
            if is_terminal(state):
                barrier = orchestrator_batches((yield ReadHistory()))
                wait = 0.0
                continue  # one more read: items may have landed between the head read and the status read
        if left is not None and left <= (0 if wait else pause):
            raise _timed_out(position, timeout)
        if version is None or blocked:
            yield Sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE)


def _hold(left: float | None) -> float:
    return HOLD_SECONDS if left is None else max(0.0, min(HOLD_SECONDS, left))


def _timed_out(position: _Position, timeout: float | None) -> StreamTimeoutError:
    instance_id = position.instance_id
    last = wire.make_cursor(instance_id, position.offset) if position.offset >= 0 else None
    return StreamTimeoutError(
        f"subscribe: timed out after {timeout}s waiting for items of '{instance_id}' (last delivered: {last})"
    )


def _reached(head: dict[str, Any] | None, barrier: tuple[str, int]) -> bool:
    execution_id, last = barrier
    if last == 0:
        return True
    return head is not None and int(head["prod"].get(f"o|{execution_id}", 0)) >= last


def _deliver(
    position: _Position, head: dict[str, Any] | None, decode: Callable[[str | None], Any]
) -> Generator[Step, Any, tuple[bool, bool]]:
    """Deliver what the head (and its sealed segments) hold after the position; whether the position moved, and
    whether a sealed segment it needs is not stored yet."""
    if head is None:
        return False, False
    start = position.offset
    marker = position.dropped(int(head["first"]))
    if marker is not None:
        yield Deliver(marker)
    for number, _first, last, _size in head["segs"]:
        if last <= position.offset:
            continue
        segment = yield ReadEntity(wire.segment_entity(position.instance_id, number))
        if segment is None:  # sealed, but its segment entity has not stored it yet
            return position.offset != start, True
        yield from _items(position, segment["items"], decode)
    yield from _items(position, head["items"], decode)
    return position.offset != start, False


def _items(
    position: _Position, items: list[list[Any]], decode: Callable[[str | None], Any]
) -> Generator[Step, Any, None]:
    for stored in items:
        if stored[0] <= position.offset:
            continue
        item = position.item(stored, decode)
        if item is not None:
            yield Deliver(item)
