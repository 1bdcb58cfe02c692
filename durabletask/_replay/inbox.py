"""External events: waiters and not-yet-consumed events by case-insensitive name, in arrival order."""

from __future__ import annotations

from collections import deque
from typing import Any

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.failures import EventTimeoutError
from durabletask._replay.tasks import CancellableTask, Task, TimerTask


class EventInbox:
    """Pairs raised events with ``wait_for_external_event`` calls, first come first served per name."""

    __slots__ = ("_arrivals", "_buffered", "_waiters")

    def __init__(self) -> None:
        # key → (arrival index, name as raised, raw JSON payload)
        self._buffered: dict[str, deque[tuple[int, str, str | None]]] = {}
        self._waiters: dict[str, deque[CancellableTask[Any]]] = {}
        self._arrivals = 0

    def take_buffered(self, key: str) -> tuple[bool, str | None]:
        """Consume the oldest buffered event under ``key``: ``(found, raw payload)``."""
        queue = self._buffered.get(key)
        if not queue:
            return False, None
        _, _, raw = queue.popleft()
        if not queue:
            del self._buffered[key]
        return True, raw

    def buffer(self, key: str, name: str, raw: str | None) -> None:
        """Keep an event nobody waits for yet."""
        queue = self._buffered.get(key)
        if queue is None:
            queue = self._buffered[key] = deque()
        queue.append((self._arrivals, name, raw))
        self._arrivals += 1

    def add_waiter(self, key: str, task: CancellableTask[Any]) -> None:
        queue = self._waiters.get(key)
        if queue is None:
            queue = self._waiters[key] = deque()
        queue.append(task)

    def pop_waiter(self, key: str) -> CancellableTask[Any] | None:
        """The oldest task waiting for ``key``, removed from the queue."""
        queue = self._waiters.get(key)
        if not queue:
            return None
        task = queue.popleft()
        if not queue:
            del self._waiters[key]
        return task

    def remove_waiter(self, key: str, task: CancellableTask[Any]) -> None:
        queue = self._waiters.get(key)
        if queue is None or task not in queue:
            return
        queue.remove(task)
        if not queue:
            del self._waiters[key]

    def carryover(self) -> list[pb.HistoryEvent]:
        """Unconsumed events, oldest first, as ``eventRaised`` events for a continued-as-new execution."""
        pending = sorted(item for queue in self._buffered.values() for item in queue)
        events = []
        for _, name, raw in pending:
            raised = pb.EventRaisedEvent(name=name)
            if raw is not None:
                raised.input.value = raw
            events.append(pb.HistoryEvent(eventId=-1, eventRaised=raised))
        return events


class EventTimeout:
    """Races a wait against its timeout timer: whichever finishes first settles the other."""

    __slots__ = ("_inbox", "_key", "_name", "_timer", "_wait")

    def __init__(self, inbox: EventInbox, key: str, name: str, wait: CancellableTask[Any], timer: TimerTask) -> None:
        self._inbox = inbox
        self._key = key
        self._name = name
        self._wait = wait
        self._timer = timer
        wait._observe(self)
        timer._observe(self)

    def on_child_completed(self, task: Task[Any]) -> None:
        if task is self._wait:
            self._timer.cancel()
        elif not self._timer.is_cancelled and not self._wait.is_complete:
            self._inbox.remove_waiter(self._key, self._wait)
            self._wait._fail_with(EventTimeoutError(f"Timed out waiting for external event '{self._name}'."))
