"""The in-memory test backend: the emulator run in-process with all state in memory."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from dtscale_emulator.limits import Limits
from dtscale_emulator.ops.clock import Clock, ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities.entity_instance_id import EntityInstanceId as EntityInstanceId  # as in Microsoft's module

__all__ = ["InMemoryOrchestrationBackend", "create_test_backend"]


# The records Microsoft's in-memory backend keeps its state in, with its fields and defaults, for code that
# builds or reads them. This backend keeps that state in the emulator's store instead, so none of its methods
# return one.


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class OrchestrationInstance:
    """An orchestration instance as the in-memory backend records it."""

    instance_id: str
    name: str
    status: pb.OrchestrationStatus
    version: str | None = None
    input: str | None = None
    output: str | None = None
    custom_status: str | None = None
    created_at: datetime = field(default_factory=_now)
    last_updated_at: datetime = field(default_factory=_now)
    completed_at: datetime | None = None
    failure_details: pb.TaskFailureDetails | None = None
    history: list[pb.HistoryEvent] = field(default_factory=list)
    pending_events: list[pb.HistoryEvent] = field(default_factory=list)
    dispatched_events: list[pb.HistoryEvent] = field(default_factory=list)
    completion_token: int = 0
    tags: dict[str, str] | None = None


@dataclass
class ActivityWorkItem:
    """An activity waiting to be run."""

    instance_id: str
    name: str
    task_id: int
    input: str | None
    completion_token: int
    version: str | None = None


@dataclass
class EntityState:
    """An entity as the in-memory backend records it: its state, lock and queued operations."""

    instance_id: str
    serialized_state: str | None = None
    last_modified_at: datetime = field(default_factory=_now)
    locked_by: str | None = None
    pending_operations: list[pb.HistoryEvent] = field(default_factory=list)
    dispatched_operations: list[pb.HistoryEvent] = field(default_factory=list)
    completion_token: int = 0


@dataclass
class PendingLockRequest:
    """An orchestration's request to lock a set of entities, not yet granted."""

    critical_section_id: str
    parent_instance_id: str
    lock_set: list[str]


@dataclass
class EntityWorkItem:
    """A batch of operations waiting to be run on one entity."""

    instance_id: str
    entity_state: str | None
    operations: list[pb.HistoryEvent]
    completion_token: int


@dataclass
class StateWaiter:
    """A caller waiting for an instance to reach a state: set ``result`` and ``event`` when ``predicate`` holds."""

    predicate: Callable[[OrchestrationInstance], bool]
    event: threading.Event = field(default_factory=threading.Event)
    result: OrchestrationInstance | None = None


class InMemoryOrchestrationBackend:
    """An in-memory Durable Task backend serving gRPC on ``localhost:<port>``.

    Args:
        max_history_size: Most history events one orchestration may accumulate; a completion that
            would exceed it is rejected with RESOURCE_EXHAUSTED.
        port: Port to listen on (0 picks a free one; read it back from :attr:`port`).
        clock: Optional time source, e.g. :class:`dtscale_emulator.ManualClock` to skip time in tests.
        time_skipping: Whenever no work item is leased or ready (no orchestration turn, activity or entity batch),
            the backend's clock jumps to the next due timer: a month-long workflow runs in moments, and never
            faster than its work. The clock then moves only by those jumps and :meth:`advance_time`.
    """

    def __init__(
        self,
        max_history_size: int = 10000,
        port: int = 50051,
        clock: Clock | None = None,
        *,
        time_skipping: bool = False,
    ) -> None:
        self._server = EmulatorServer(
            host="localhost",
            port=port,
            in_memory=True,
            clock=clock,
            dynamic_task_hubs=True,
            limits=Limits(max_history_events=max_history_size),
            time_skipping=time_skipping,
        )

    @property
    def port(self) -> int:
        """The port the backend listens on."""
        return self._server.port

    @property
    def address(self) -> str:
        """``localhost:<port>``, ready for ``TaskHubGrpcClient(host_address=...)``."""
        return f"localhost:{self.port}"

    @property
    def time_skipping(self) -> bool:
        """Whether the clock jumps to the next due timer whenever the backend is idle."""
        return self._server.time_skipper is not None

    def now(self) -> datetime:
        """The backend's current time (UTC): the time orchestrations see on their next turn."""
        return self._server.clock.now()

    def advance_time(self, delta: timedelta) -> datetime:
        """Moves the backend's clock forward by ``delta`` and returns the new time; timers now due fire.

        Needs a clock that can be moved: ``time_skipping=True`` or a :class:`~dtscale_emulator.ManualClock`.

        Args:
            delta: How far to move the clock.

        Raises:
            RuntimeError: The backend's clock cannot be moved.
            TypeError: ``delta`` is not a ``timedelta``.
        """
        clock = self._server.clock
        if not isinstance(clock, ManualClock):
            raise RuntimeError("advance_time() needs a backend made with time_skipping=True or clock=ManualClock()")
        if not isinstance(delta, timedelta):
            raise TypeError(f"advance_time() takes a timedelta, not {type(delta).__name__}")
        return clock.advance(delta)

    @contextmanager
    def time_skipping_paused(self) -> Iterator[None]:
        """Within the block the clock does not jump (e.g. to raise an event before a timeout may fire)."""
        skipper = self._server.time_skipper
        if skipper is None:
            yield
            return
        with skipper.paused():
            yield

    def start(self) -> str:
        """Starts serving and returns the address."""
        self._server.start()
        return self.address

    def stop(self, grace: float | None = None) -> None:
        """Stops serving; state is kept until :meth:`reset`.

        Args:
            grace: Seconds in-flight calls get to finish; ``None`` aborts them at once.
        """
        self._server.stop(grace)

    def reset(self) -> None:
        """Deletes every orchestration instance and all pending work."""
        self._server.reset()


def create_test_backend(
    port: int = 50051, max_history_size: int = 10000, *, time_skipping: bool = False
) -> InMemoryOrchestrationBackend:
    """Creates and starts an in-memory backend listening on ``localhost:<port>``.

    Args:
        port: Port to listen on (default 50051).
        max_history_size: Most history events one orchestration may accumulate.
        time_skipping: Jump the clock to the next due timer whenever no work is leased or ready (see
            :class:`InMemoryOrchestrationBackend`); an addition to the compatible API.

    Returns:
        The started backend; call ``stop()`` when done and ``reset()`` to clear state between tests.
    """
    backend = InMemoryOrchestrationBackend(max_history_size=max_history_size, port=port, time_skipping=time_skipping)
    backend.start()
    return backend
