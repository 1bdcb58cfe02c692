"""Extended sessions: live orchestration executors kept between work items, bounded in number and idle time."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._protocol_extensions import INCLUDE_PAST_EVENTS

E = TypeVar("E")


@dataclass(frozen=True)
class ExtendedSessionOptions:
    """How many live orchestrations a worker keeps between work items, and for how long.

    A kept orchestration resumes with only the events that arrived since its last step instead of
    replaying its whole history, which makes each step cost the same however long the history is.
    Only backends that know the protocol extension use it; others keep sending full histories, and with
    them the worker keeps nothing.
    A kept orchestration's function is not called again for its next step, so it is called fewer times
    than with Microsoft's SDK (which calls it once per work item); ``max_cached_orchestrations=0`` restores
    one call per work item.

    Args:
        max_cached_orchestrations: Live orchestrations kept at once; the least recently used one is
            dropped to make room. ``0`` turns extended sessions off.
        idle_timeout_seconds: An orchestration with no work item for this long is dropped.
    """

    max_cached_orchestrations: int = 1000
    idle_timeout_seconds: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.max_cached_orchestrations, bool) or self.max_cached_orchestrations < 0:
            raise ValueError(f"max_cached_orchestrations must be >= 0, got {self.max_cached_orchestrations!r}")
        if self.idle_timeout_seconds <= 0:
            raise ValueError(f"idle_timeout_seconds must be > 0, got {self.idle_timeout_seconds!r}")

    @property
    def enabled(self) -> bool:
        return self.max_cached_orchestrations > 0


def offers_session(request: pb.OrchestratorRequest) -> bool:
    """Whether the backend will continue this orchestration with new events alone if the worker keeps it."""
    value = request.properties.get(INCLUDE_PAST_EVENTS)
    return value is not None and value.WhichOneof("kind") == "bool_value"


def is_continuation(request: pb.OrchestratorRequest) -> bool:
    """Whether the backend sent only new events, expecting the worker to hold the orchestration."""
    value = request.properties.get(INCLUDE_PAST_EVENTS)
    return value is not None and value.WhichOneof("kind") == "bool_value" and not value.bool_value


@dataclass
class _Entry(Generic[E]):
    execution_id: str
    executor: E
    last_used: float


class SessionCache(Generic[E]):
    """Live executors by instance ID; least recently used first, so idle ones are found at the front.

    A work item takes its executor out (:meth:`take`) and puts it back when done (:meth:`put`), so an
    executor is never shared: the backend leases one work item per instance at a time.
    """

    def __init__(self, options: ExtendedSessionOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = options.max_cached_orchestrations
        self._idle = options.idle_timeout_seconds
        self._clock = clock
        self._entries: OrderedDict[str, _Entry[E]] = OrderedDict()
        # The newest work item started per instance. A redelivered work item (after a lease expired)
        # can finish after its replacement; only the newest may leave its executor behind.
        self._tickets: dict[str, int] = {}
        self._issued = 0
        self._lock = threading.Lock()
        self.evictions = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def begin(self, instance_id: str) -> int:
        """Register a work item of the instance starting; pass the ticket to :meth:`put`."""
        with self._lock:
            self._issued += 1
            self._tickets[instance_id] = self._issued
            return self._issued

    def take(self, instance_id: str, execution_id: str) -> E | None:
        """Remove and return the executor of that execution, or ``None`` if it is not held (any more)."""
        now = self._clock()
        with self._lock:
            self._expire(now)
            entry = self._entries.pop(instance_id, None)
        if entry is None or entry.execution_id != execution_id:
            return None
        return entry.executor

    def put(self, instance_id: str, execution_id: str, executor: E, ticket: int | None = None) -> None:
        """Keep ``executor`` (replacing any other execution of the instance), evicting to stay in bounds.

        With a ``ticket`` from :meth:`begin`, nothing is kept if a newer work item of the instance began.
        """
        now = self._clock()
        with self._lock:
            if ticket is not None and self._tickets.get(instance_id, ticket) != ticket:
                return
            self._entries.pop(instance_id, None)
            self._entries[instance_id] = _Entry(execution_id, executor, now)
            self._expire(now)
            while len(self._entries) > self._capacity:
                self._drop_oldest()

    def discard(self, instance_id: str, ticket: int | None = None) -> None:
        with self._lock:
            if ticket is not None and self._tickets.get(instance_id, ticket) != ticket:
                return
            self._entries.pop(instance_id, None)
            self._tickets.pop(instance_id, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._tickets.clear()

    def _expire(self, now: float) -> None:
        entries = self._entries
        while entries:
            oldest = next(iter(entries.values()))
            if now - oldest.last_used < self._idle:
                return
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        instance_id, _ = self._entries.popitem(last=False)
        # Tickets of instances no longer held go too, so memory follows the cache's bound.
        self._tickets.pop(instance_id, None)
        self.evictions += 1
