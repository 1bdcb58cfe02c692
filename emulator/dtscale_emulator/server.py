"""EmulatorServer: wires storage, engine, dispatcher and servicer into a gRPC server."""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from types import TracebackType

import grpc

from dtscale_emulator.dispatch.dispatcher import WorkDispatcher
from dtscale_emulator.dispatch.time_skipping import TimeSkipper, skipping_clock
from dtscale_emulator.engine.changes import ChangeFeed
from dtscale_emulator.engine.entities import Entities
from dtscale_emulator.engine.events import to_micros
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.engine.work import Interleaver
from dtscale_emulator.limits import Limits
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.ops.clock import Clock, SystemClock
from dtscale_emulator.ops.faults import FaultInjector, FaultProfile
from dtscale_emulator.ops.tracing import WorkTracer
from dtscale_emulator.ops.tracing.otlp import OtlpExport, work_tracer
from dtscale_emulator.rpc import worker_view
from dtscale_emulator.rpc.auth import BearerTokenInterceptor, ServerInterceptor, server_credentials
from dtscale_emulator.rpc.hubs import DEFAULT_HUB, TaskHubs
from dtscale_emulator.rpc.methods import service_handler
from dtscale_emulator.rpc.servicer import Servicer
from dtscale_emulator.storage import ActivityRecord, EntityRecord, SqliteBackend

log = logging.getLogger("dtscale_emulator")
#: Seconds for which a restarted emulator keeps the activity leases of the process before it (``restart_grace``).
DEFAULT_RESTART_GRACE = 15.0
#: Seconds a graceful stop (:meth:`EmulatorServer.shutdown`, SIGTERM, Ctrl-C) waits for work already handed out.
DEFAULT_STOP_GRACE = 5.0


class EmulatorServer:
    """A local Durable Task Scheduler speaking TaskHubSidecarService over gRPC (plaintext unless given TLS files).

    Args:
        host: Interface to bind.
        port: TCP port; 0 picks a free one (read it back from :attr:`port`).
        db_path: SQLite file for persistent state; ``None`` keeps everything in memory.
        in_memory: Forces in-memory storage even when ``db_path`` is given.
        task_hubs: Task hubs that exist from the start.
        dynamic_task_hubs: Create unknown task hubs on first use instead of answering NOT_FOUND.
        clock: Time source; pass a :class:`~dtscale_emulator.ops.clock.ManualClock` to control timers in tests.
        lease_timeout: Seconds after which an uncompleted work item is offered to another worker.
        health_ping_interval: Seconds of idleness after which a stream receives a HealthPing.
        limits: Payload and instance ID limits.
        auth_token: When set, every call must carry ``authorization: Bearer <token>`` or is refused with
            UNAUTHENTICATED.
        tls_cert: PEM certificate (chain) file; with ``tls_key`` the server speaks TLS only.
        tls_key: PEM private key file for ``tls_cert``.
        faults: Faults to inject from the start (see :class:`~dtscale_emulator.ops.faults.FaultProfile`); tests can
            also drive :attr:`faults` directly.
        durability: ``"full"`` (default: every commit is synced to disk before the call is answered, so what was
            acknowledged survives an OS crash or power loss) or ``"normal"`` (faster: a commit survives a crash of
            the process, but an OS crash or power loss may lose the commits since the last checkpoint).
        integrity_check: Check every page of an existing ``db_path`` with SQLite's ``quick_check`` before serving
            it, and refuse a damaged store (:class:`~dtscale_emulator.errors.StoreUnusableError`). It reads the
            whole file; ``False`` skips it on a store known to be sound.
        otlp_endpoint: An OTLP/gRPC collector (``http://host:4317``) to export the emulator's own spans to: the
            queueing, dispatch and commit of each traced work item, in the trace it carries. Needs the
            ``otlp`` extra.
        keepalive_interval: Seconds between the HTTP/2 pings the server sends on a connection with open calls.
        keepalive_timeout: Seconds a ping may go unanswered before its connection is closed. A worker that
            froze, or whose host vanished without closing the connection, then loses its stream, and the work
            items it held are offered again at once rather than after ``lease_timeout``.
        handshake_timeout: Seconds a new connection has to complete its handshake (TLS, then HTTP/2's preface and
            settings); one that sends part of it and stops is closed then.
        idle_timeout: Seconds a connection with no call open stays open; then the server closes it (GOAWAY), so
            connections that a client opened and left, or that only ever sent part of a frame, do not pile up. A
            client whose connection was closed so opens a new one on its next call, as gRPC clients do.
        interleaver: Perturbs where concurrent work meets (sends, completions, arrivals, timers, stream drops) to
            make races show in tests, e.g. a :class:`~dtscale_emulator.ops.faults.SeededInterleaver`; ``None`` (the
            default) costs nothing.
        time_skipping: For tests: whenever no work item is leased or ready, the clock jumps to the next due timer
            (see :class:`~dtscale_emulator.dispatch.time_skipping.TimeSkipper`). The clock is then a
            :class:`ManualClock` (``clock`` if one is given, else one starting at the current time), which moves
            only by those jumps and :meth:`ManualClock.advance`.
        restart_grace: Seconds for which the activity leases a crashed previous process left in ``db_path`` stay
            valid, each no longer than its own lease: a worker that ran such an activity may still deliver its
            result, which counts, and the activity is offered again only once that time is over. ``0`` offers
            them again at once. (:meth:`stop` hands every work item back first, so it leaves no leases;
            :meth:`shutdown` leaves them as a crash does.)

    Raises:
        DatabaseInUseError: another emulator already serves ``db_path`` (by this or any other path to the file).
        StoreUnusableError: ``db_path`` cannot serve as the store (missing folder, read-only, not a SQLite database,
            another application's tables, a newer schema, damaged); the file is left as it was.
        OtlpUnavailableError: ``otlp_endpoint`` is given but the ``otlp`` extra is not installed.
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
        auth_token: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        faults: FaultProfile | None = None,
        durability: str = "full",
        otlp_endpoint: str | None = None,
        keepalive_interval: float = 30.0,
        keepalive_timeout: float = 20.0,
        handshake_timeout: float = 20.0,
        idle_timeout: float = 300.0,
        interleaver: Interleaver | None = None,
        time_skipping: bool = False,
        integrity_check: bool = True,
        restart_grace: float = DEFAULT_RESTART_GRACE,
    ) -> None:
        if (tls_cert is None) != (tls_key is None):
            raise ValueError("tls_cert and tls_key must be given together")
        timeouts = {
            "keepalive_interval": keepalive_interval,
            "keepalive_timeout": keepalive_timeout,
            "handshake_timeout": handshake_timeout,
            "idle_timeout": idle_timeout,
        }
        for name, value in timeouts.items():
            if not 0.001 <= value <= 86_400:
                raise ValueError(f"{name} must be between 0.001 and 86400 seconds, got {value}")
        if not 0 <= restart_grace <= 86_400:
            raise ValueError(f"restart_grace must be between 0 and 86400 seconds, got {restart_grace}")
        self._keepalive_ms = (round(keepalive_interval * 1000), round(keepalive_timeout * 1000))
        self._connection_ms = (round(handshake_timeout * 1000), round(idle_timeout * 1000))
        # First, so a missing extra is reported before the database is opened.
        tracer: WorkTracer | None = None
        self._otlp: OtlpExport | None = None
        if otlp_endpoint:
            tracer, self._otlp = work_tracer(otlp_endpoint)
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        skipping = skipping_clock(clock) if time_skipping else None
        self.clock: Clock = skipping or clock or SystemClock()
        self.backend = SqliteBackend(None if in_memory else db_path, durability, integrity_check)
        try:
            carried = self._release_leases(restart_grace)
        except BaseException:
            self.backend.close()  # and with it the lock on the file
            raise
        self.limits = limits or Limits()
        changes = ChangeFeed()
        self.engine = Engine(self.backend, self.clock, changes, max_history_events=self.limits.max_history_events)
        self.entities = Entities(self.backend, self.clock, changes)
        self.dispatcher = WorkDispatcher(
            self.engine, self.entities, lease_timeout, health_ping_interval, self.limits, tracer, interleaver
        )
        changes.subscribe(self.dispatcher)
        self.dispatcher.carry_over(carried)
        #: Jumps the clock while the emulator is idle (``time_skipping``), else ``None``.
        self.time_skipper = None if skipping is None else TimeSkipper(self.backend, skipping, task_hubs)
        if self.time_skipper is not None:
            changes.subscribe(self.time_skipper)
            self.dispatcher.on_lease_end(self.time_skipper.lease_ended)
        self.hubs = TaskHubs(self.backend, task_hubs, dynamic_task_hubs)
        self._server: grpc.aio.Server | None = None
        self._auth = BearerTokenInterceptor(auth_token) if auth_token else None
        self._tls = (tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
        self._restart_lock = threading.Lock()
        self._leases_kept = False  # set by shutdown(): a later stop() must not release them after all
        #: Fault injection hooks (a pass-through until a fault is turned on).
        self.faults = FaultInjector(
            abandon=self.dispatcher.abandon, wake=self.dispatcher.wake, restart=lambda grace: self.restart(grace)
        )
        self._initial_faults = faults

    def _release_leases(self, grace: float) -> list[ActivityRecord | EntityRecord]:
        """Frees the leases a previous process left in the store, keeping activities' and entities' for ``grace`` s."""
        if not grace:
            return self.backend.release_all_leases()
        now = self.clock.now()
        until = now + timedelta(seconds=grace)
        return self.backend.release_all_leases(keep_until=to_micros(until), now=to_micros(now))

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
        self._leases_kept = False
        self._server, self._port = aio_loop.run(self._serve(f"{self.host}:{self._requested_port}"))
        log.info("Durable Task emulator listening on %s%s", self.address, " (TLS)" if self._tls else "")
        if self._auth is not None and self._tls is None and not _is_loopback(self.host):
            log.warning(
                "an auth token is required but TLS is off on %s, which is reachable from other machines: the "
                "token travels in clear text; give --tls-cert and --tls-key, or bind 127.0.0.1",
                self.host,
            )
        if self._initial_faults is not None:
            self.faults.apply(self._initial_faults)
            self._initial_faults = None
        if self.time_skipper is not None:
            self.time_skipper.start()
        return self

    async def _serve(self, address: str) -> tuple[grpc.aio.Server, int]:
        # Authentication is the only interceptor, so no fault and no servicer code sees an unauthenticated call.
        interceptors: list[ServerInterceptor] = [] if self._auth is None else [self._auth]
        server = grpc.aio.server(
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
                # Pings on connections with open calls find peers that stopped answering (see keepalive_timeout).
                ("grpc.keepalive_time_ms", self._keepalive_ms[0]),
                ("grpc.keepalive_timeout_ms", self._keepalive_ms[1]),
                ("grpc.http2.ping_timeout_ms", self._keepalive_ms[1]),
                ("grpc.keepalive_permit_without_calls", 0),
                # Keep pinging an idle stream: by default the server stops after two pings without data.
                ("grpc.http2.max_pings_without_data", 0),
                # A client that connects and sends half of the handshake, or nothing after it, is closed in time.
                ("grpc.server_handshake_timeout_ms", self._connection_ms[0]),
                ("grpc.max_connection_idle_ms", self._connection_ms[1]),
            ],
        )
        servicer = Servicer(self.engine, self.entities, self.dispatcher, self.hubs, self.limits, self.faults)
        server.add_generic_rpc_handlers(
            (
                service_handler(servicer),
                worker_view.handler(worker_view.WorkerView(self.hubs, self.dispatcher, self.backend, self.clock)),
            )
        )
        if self._tls is not None:
            bound = server.add_secure_port(address, server_credentials(*self._tls))
        else:
            bound = server.add_insecure_port(address)
        if bound == 0:
            raise OSError(f"could not bind {address}")
        await server.start()
        return server, bound

    @property
    def otlp(self) -> OtlpExport | None:
        """The exporter of the emulator's spans, when ``otlp_endpoint`` was given."""
        return self._otlp

    @property
    def tls(self) -> bool:
        """Whether the server speaks TLS."""
        return self._tls is not None

    def restart(self, grace: float = 1.0) -> None:
        """Stops serving gracefully and serves again on the same port, keeping all state.

        Connected clients receive GOAWAY and reconnect; open work-item streams end and their work items
        become available again.

        Args:
            grace: Seconds in-flight RPCs get to finish before the old server is cut off.
        """
        with self._restart_lock:
            port = self.port
            self._stop_serving(grace)
            self._requested_port = port
            self.start()

    def stop(self, grace: float | None = 0.2) -> None:
        """Stops serving; open streams end and their work items become available again.

        State is kept, so :meth:`start` may be called again (and :meth:`reset` still works).

        Args:
            grace: Seconds in-flight RPCs get to finish; ``None`` aborts them at once (as ``grpc.aio`` does).
        """
        self.faults.stop_schedule()
        if self.time_skipper is not None:
            self.time_skipper.stop()
        self._stop_serving(grace)
        if self._otlp is not None:
            self._otlp.flush()

    def shutdown(self, grace: float = DEFAULT_STOP_GRACE) -> None:
        """Stops serving as a process about to exit should: no work item runs again that a crash would not rerun.

        For up to ``grace`` seconds the server leases nothing more, keeps the workers' streams open and takes
        the results of the work it handed out; then it stops, and the leases still out stay in the store, as
        after a crash (``kill -9``). The next process on the same ``db_path`` keeps them for its
        ``restart_grace``, so a result a worker delivers then still counts, and the work runs again only if
        none comes. (:meth:`stop` instead hands every work item back at once: each runs again.)

        Args:
            grace: Seconds (0 to 86400) to keep taking results before stopping.

        Raises:
            ValueError: ``grace`` is outside 0 to 86400.
        """
        if not 0 <= grace <= 86_400:
            raise ValueError(f"grace must be between 0 and 86400 seconds, got {grace}")
        self.faults.stop_schedule()
        if self.time_skipper is not None:
            self.time_skipper.stop()
        started = time.monotonic()
        left = self.dispatcher.drain_leases(grace)
        if left:
            log.info("stopping with %d work item(s) still out; their leases stay for the next start", left)
        # What came in while draining finishes within what is left of the grace (a moment at least).
        self._stop_serving(max(grace - (time.monotonic() - started), 0.5), keep_leases=True)
        if self._otlp is not None:
            self._otlp.flush()

    def _stop_serving(self, grace: float | None, *, keep_leases: bool = False) -> None:
        keep_leases = keep_leases or self._leases_kept
        self.dispatcher.close(keep_leases=keep_leases)
        if self._server is not None:
            aio_loop.run(self._server.stop(grace))
            self._server = None
        if not self.dispatcher.drain(timeout=5.0):
            log.warning("some streams were still running when the emulator stopped")
        if keep_leases:
            self._leases_kept = True
        else:
            self.backend.release_all_leases()

    def close(self) -> None:
        """Stops serving and closes the database."""
        self.stop()
        self.backend.close()
        if self._otlp is not None:
            self._otlp.shutdown()

    def reset(self) -> None:
        """Deletes every instance, history, message and activity in every task hub."""
        self.backend.reset()
        self.dispatcher.forget_all()
        self.dispatcher.wake()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost: assume other machines can reach it
