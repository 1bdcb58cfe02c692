"""EmulatorServer: wires storage, engine, dispatcher and servicer into a gRPC server."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent import futures
from types import TracebackType

import grpc

from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from emulator.clock import Clock, SystemClock
from emulator.dispatcher import Dispatcher
from emulator.engine import Engine
from emulator.entities import Entities
from emulator.hubs import DEFAULT_HUB, TaskHubs
from emulator.servicer import Servicer
from emulator.storage import SqliteBackend
from emulator.validation import Limits

log = logging.getLogger("emulator")

# Each GetWorkItems stream and each server-side wait holds a thread for its whole life, so the pool
# must be large enough that long-lived calls never starve short unary ones.
DEFAULT_MAX_WORKERS = 128


class EmulatorServer:
    """A local Durable Task Scheduler speaking TaskHubSidecarService over plaintext gRPC.

    Args:
        host: Interface to bind.
        port: TCP port; 0 picks a free one (read it back from :attr:`port`).
        db_path: SQLite file for persistent state; ``None`` keeps everything in memory.
        in_memory: Forces in-memory storage even when ``db_path`` is given.
        task_hubs: Task hubs that exist from the start.
        dynamic_task_hubs: Create unknown task hubs on first use instead of answering NOT_FOUND.
        clock: Time source; pass a :class:`~emulator.clock.ManualClock` to control timers in tests.
        lease_timeout: Seconds after which an uncompleted work item is offered to another worker.
        health_ping_interval: Seconds of idleness after which a stream receives a HealthPing.
        limits: Payload and instance ID limits.
        max_workers: gRPC thread-pool size.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8080,
        db_path: str | None = None,
        in_memory: bool = False,
        task_hubs: Sequence[str] = (DEFAULT_HUB,),
        dynamic_task_hubs: bool = False,
        clock: Clock | None = None,
        lease_timeout: float = 300.0,
        health_ping_interval: float = 15.0,
        limits: Limits | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
    ) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self.clock = clock or SystemClock()
        self.backend = SqliteBackend(None if in_memory else db_path)
        self.backend.release_all_leases()
        self.dispatcher: Dispatcher
        self.limits = limits or Limits()
        self.engine = Engine(
            self.backend,
            self.clock,
            lambda hub: self.dispatcher.wake(hub),
            max_history_events=self.limits.max_history_events,
        )
        self.entities = Entities(self.backend, self.clock, lambda hub: self.dispatcher.wake(hub))
        self.dispatcher = Dispatcher(self.engine, self.entities, lease_timeout, health_ping_interval)
        self.hubs = TaskHubs(self.backend, task_hubs, dynamic_task_hubs)
        self._max_workers = max_workers
        self._server: grpc.Server | None = None

    @property
    def port(self) -> int:
        """The bound port (only known after :meth:`start`)."""
        if self._port is None:
            raise RuntimeError("the emulator has not been started")
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` to give to clients and workers."""
        return f"{self.host}:{self.port}"

    def start(self) -> EmulatorServer:
        """Binds the port and starts serving; returns ``self``."""
        self.dispatcher.open()
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix="dts-emulator"),
            options=[
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
            ],
        )
        pb_grpc.add_TaskHubSidecarServiceServicer_to_server(
            Servicer(self.engine, self.entities, self.dispatcher, self.hubs, self.limits), server
        )
        bound = server.add_insecure_port(f"{self.host}:{self._requested_port}")
        if bound == 0:
            raise OSError(f"could not bind {self.host}:{self._requested_port}")
        server.start()
        self._server, self._port = server, bound
        log.info("Durable Task emulator listening on %s", self.address)
        return self

    def stop(self, grace: float | None = None) -> None:
        """Stops serving; open streams end and their work items become available again.

        State is kept, so :meth:`start` may be called again (and :meth:`reset` still works).
        """
        self.dispatcher.close()
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
        if not self.dispatcher.drain(timeout=5.0):
            log.warning("some streams were still running when the emulator stopped")
        self.backend.release_all_leases()

    def close(self) -> None:
        """Stops serving and closes the database."""
        self.stop()
        self.backend.close()

    def reset(self) -> None:
        """Deletes every instance, history, message and activity in every task hub."""
        self.backend.reset()
        self.dispatcher.wake()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
