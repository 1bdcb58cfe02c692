"""``TaskHubGrpcWorker``: registration and configuration, and starting/stopping the stream and dispatch."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, cast, overload

import grpc

from durabletask._grpc.channel import (
    ClientInterceptor,
    create_channel,
    get_default_host_address,
    intercept_given_channel,
)
from durabletask._grpc.large_payloads import FetchedPayloads, PayloadBoundary, payload_limit
from durabletask._logging import resolve_logger
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._protocol_extensions import EXTENDED_SESSIONS_CAPABILITY
from durabletask._tracing.orchestration import OrchestrationTracer
from durabletask._worker.activity_runner import ActivityRunner, is_async_callable
from durabletask._worker.code_check import CodeMismatchPolicy
from durabletask._worker.completions import CompletionSender
from durabletask._worker.dispatch import WorkItemPools, WorkKind, startable_limits
from durabletask._worker.entity_runner import EntityRunner
from durabletask._worker.filters import WorkItemFilters, filters_from_registry, filters_to_proto
from durabletask._worker.heartbeats import HeartbeatPump
from durabletask._worker.large_payloads import PayloadWorkItems
from durabletask._worker.options import ConcurrencyOptions, VersioningOptions
from durabletask._worker.orchestration_runner import (
    Executor,
    ExecutorFactory,
    OrchestrationRunner,
    default_executor_factory,
)
from durabletask._worker.registry import WorkerRegistry
from durabletask._worker.session_cache import ExtendedSessionOptions, SessionCache
from durabletask._worker.stream import ChannelProvider, StreamLoop, history_fetcher
from durabletask._worker.streams import StreamTransport, stream_entities
from durabletask._worker.work_items import WorkItemHandler
from durabletask.exception_properties import ExceptionPropertiesProvider
from durabletask.grpc_options import GrpcChannelOptions, GrpcWorkerResiliencyOptions
from durabletask.payload.store import PayloadStore
from durabletask.serialization import DataConverter

DEFAULT_MAXIMUM_TIMER_INTERVAL = timedelta(days=3)
#: How long :meth:`TaskHubGrpcWorker.stop` lets running work items finish.
DEFAULT_STOP_GRACE_SECONDS = 30.0

# Marks "generate the filters from the registry at start()" apart from None ("no filters").
_AUTO_GENERATE_FILTERS: Any = object()


class TaskHubGrpcWorker:
    """Receives orchestration, activity and entity work items over gRPC and runs the registered code.

    Register functions, then :meth:`start` (returns at once; work runs on background threads) and
    :meth:`stop`. Usable as a (sync or async) context manager, which stops the worker on exit.

    Args:
        host_address: The sidecar or scheduler endpoint (default ``localhost:4001``).
        metadata: gRPC headers sent with every call.
        log_handler: Deprecated; a handler for the worker's private logger.
        log_formatter: Deprecated; a formatter for that handler.
        logger: The logger to write to (cannot be combined with the two above).
        channel: A ready channel to use instead of opening one (never closed by the worker). ``metadata`` and
            ``interceptors`` still apply to it (Microsoft's worker drops them); ``host_address``,
            ``secure_channel`` and ``channel_options`` only shape a channel the worker opens.
        secure_channel: Use TLS when ``host_address`` has no scheme.
        interceptors: Extra gRPC client interceptors.
        channel_options: Channel settings (message sizes, keepalive, retries).
        resiliency_options: Handshake deadline, silent-stream timeout and reconnect backoff. A result the
            backend cannot be reached for is offered again with jittered exponential backoff for up to 60 s
            (``completions.DEFAULT_DELIVERY_RETRY_SECONDS``), until the backend says the lease is gone, or the
            worker stops; after a disconnection, new work is asked for only once those results are out.
        concurrency_options: Per-kind limits on work items running at once.
        maximum_timer_interval: Longest single durable timer; longer ones are chained.
        payload_store: Where payloads over its threshold go (see :mod:`durabletask.payload`): work items
            have their payloads fetched on arrival and results leave with large ones externalized.
        data_converter: Converts payloads for orchestrations and activities (default: JSON).
        exception_properties_provider: Adds custom properties to recorded failures (activities,
            orchestrators and entity operations, each exception of the cause chain).
        emit_trace_spans: Whether to record OpenTelemetry spans (when ``opentelemetry-api`` is installed).
            False only propagates W3C trace context through the protocol, as Microsoft's SDK does.
        extended_sessions: How many unfinished orchestrations stay live between work items so that
            their next step replays only new events (default :class:`ExtendedSessionOptions`, on). An
            addition to the compatible API; backends that do not support it keep sending full histories.
            While on, an orchestrator function is called fewer times than with Microsoft's SDK: a held
            orchestration resumes where it left off instead of being called again and replayed from the
            start on every work item, so code outside ``yield`` points (logging, counters) runs once per
            run rather than once per turn. ``ExtendedSessionOptions(max_cached_orchestrations=0)`` turns
            sessions off and gives exactly Microsoft's behaviour: one call per work item.
        root_certificates: PEM CA certificates to trust for TLS (e.g. a private CA); an addition to the
            compatible API.
    """

    def __init__(
        self,
        *,
        host_address: str | None = None,
        metadata: list[tuple[str, str]] | None = None,
        log_handler: logging.Handler | None = None,
        log_formatter: logging.Formatter | None = None,
        logger: logging.Logger | None = None,
        channel: grpc.Channel | None = None,
        secure_channel: bool = False,
        interceptors: Sequence[ClientInterceptor] | None = None,
        channel_options: GrpcChannelOptions | None = None,
        resiliency_options: GrpcWorkerResiliencyOptions | None = None,
        concurrency_options: ConcurrencyOptions | None = None,
        maximum_timer_interval: timedelta | None = DEFAULT_MAXIMUM_TIMER_INTERVAL,
        payload_store: PayloadStore | None = None,
        data_converter: DataConverter | None = None,
        exception_properties_provider: ExceptionPropertiesProvider | None = None,
        emit_trace_spans: bool = True,
        extended_sessions: ExtendedSessionOptions | None = None,
        root_certificates: bytes | None = None,
    ) -> None:
        self._registry = WorkerRegistry()
        self._root_certificates = root_certificates
        self._host_address = host_address or get_default_host_address()
        self._logger = resolve_logger("durabletask-worker", log_handler, log_formatter, logger)
        if logger is None and log_handler is None and self._logger.level == logging.NOTSET:
            # The default handler prints INFO and above; without a level on the logger itself, every
            # per-work-item debug call would still build a record only for the handler to drop it.
            self._logger.setLevel(logging.INFO)
        self._metadata = list(metadata) if metadata else None
        self._secure_channel = secure_channel
        self._interceptors = list(interceptors) if interceptors is not None else None
        # A channel passed in gets the metadata and interceptors too (the scheduler worker's task hub and token
        # headers among them), as with the client; otherwise it would silently serve the 'default' hub.
        self._channel = (
            intercept_given_channel(channel, self._metadata, self._interceptors) if channel is not None else None
        )
        self._channel_options = channel_options
        self._resiliency_options = resiliency_options or GrpcWorkerResiliencyOptions()
        self._concurrency_options = concurrency_options or ConcurrencyOptions()
        self._maximum_timer_interval = maximum_timer_interval
        self._payload_store: PayloadStore | None = payload_store
        self._data_converter = data_converter
        self._exception_properties_provider = exception_properties_provider
        self._emit_trace_spans = emit_trace_spans
        self._extended_sessions = extended_sessions or ExtendedSessionOptions()
        # Work items with histories too large for one message are fetched with StreamInstanceHistory.
        self._capabilities: set[int] = {pb.WORKER_CAPABILITY_HISTORY_STREAMING}
        if self._extended_sessions.enabled:
            self._capabilities.add(EXTENDED_SESSIONS_CAPABILITY)
        if payload_store is not None:
            self._capabilities.add(pb.WORKER_CAPABILITY_LARGE_PAYLOADS)
        self._work_item_filters: WorkItemFilters | None = None
        self._auto_generate_work_item_filters = False
        self._is_running = False
        self._lifecycle = threading.Lock()
        self._run: _Run | None = None

    @property
    def concurrency_options(self) -> ConcurrencyOptions:
        """The concurrency limits this worker runs with."""
        return self._concurrency_options

    @property
    def extended_sessions(self) -> ExtendedSessionOptions:
        """How many unfinished orchestrations this worker keeps live between work items."""
        return self._extended_sessions

    @property
    def maximum_timer_interval(self) -> timedelta | None:
        """The longest single durable timer; longer timers are split into a chain."""
        return self._maximum_timer_interval

    @property
    def emit_trace_spans(self) -> bool:
        """Whether the worker is configured to emit lifecycle spans."""
        return self._emit_trace_spans

    @property
    def is_running(self) -> bool:
        """Whether :meth:`start` has been called and :meth:`stop` has not finished."""
        return self._is_running

    def __enter__(self) -> TaskHubGrpcWorker:
        return self

    def __exit__(self, *args: object) -> None:
        self.stop()

    async def __aenter__(self) -> TaskHubGrpcWorker:
        return self

    async def __aexit__(self, *args: object) -> None:
        # stop() waits for running work, which must not block the caller's event loop.
        await asyncio.to_thread(self.stop)

    def _require_stopped(self, what: str) -> None:
        if self._is_running:
            raise RuntimeError(f"{what} cannot be changed while the worker is running.")

    def add_orchestrator(self, fn: Callable[..., Any], *, name: str | None = None) -> str:
        """Register an orchestrator function under ``name`` (default: its own name); returns the name.

        ``name`` is an addition to the compatible API: it lets two workers serve one orchestration name with
        different versions of the code.

        Args:
            fn: The orchestrator: a generator function, an ``async def`` function or a plain function.
            name: The name to register under; the function's ``__name__`` when ``None``.

        Raises:
            RegistrationError: No name can be derived, or the name is already registered (a ``ValueError``).
            RuntimeError: The worker is running.
        """
        self._require_stopped("Orchestrators")
        return self._registry.add_orchestrator(fn, name)

    def add_activity(self, fn: Callable[..., Any], *, name: str | None = None) -> str:
        """Register an activity function (sync or ``async``) under ``name`` (default: its own name).

        Args:
            fn: The activity function, taking ``(ActivityContext, input)``.
            name: The name to register under; the function's ``__name__`` when ``None``.

        Raises:
            RegistrationError: No name can be derived, or the name is already registered (a ``ValueError``).
            RuntimeError: The worker is running.
        """
        self._require_stopped("Activities")
        return self._registry.add_activity(fn, name)

    def add_entity(self, fn: Any, name: str | None = None) -> str:
        """Register an entity function or class, under ``name`` or its own name; returns the name.

        Args:
            fn: An entity function taking ``(EntityContext, input)``, or a ``DurableEntity`` subclass.
            name: The entity name to register under; the function's or class's name when ``None``.

        Raises:
            RegistrationError: No name can be derived, or the name is already registered (a ``ValueError``).
            RuntimeError: The worker is running.
        """
        self._require_stopped("Entities")
        return self._registry.add_entity(fn, name)

    def add_capability(self, capability: int) -> None:
        """Advertise a worker capability (a ``WorkerCapability`` value) to the backend.

        Args:
            capability: The capability, e.g. ``WORKER_CAPABILITY_SCHEDULED_TASKS``.

        Raises:
            RuntimeError: The worker is running.
        """
        self._require_stopped("Capabilities")
        self._capabilities.add(int(capability))

    def configure_scheduled_tasks(self, *, clock: Callable[[], datetime] | None = None) -> None:
        """Run schedules (``durabletask.scheduled``) on this worker: registers the ``schedule`` entity and its
        operation orchestrator and advertises the scheduled-tasks capability. Call before :meth:`start`.

        Args:
            clock: Where schedules read the current time (default: the system clock, as Microsoft's SDK).
                An addition to the compatible API, for a backend whose clock is not the system's, such
                as a test server with a controllable clock.
        """
        self._require_stopped("Scheduled tasks")
        from durabletask.scheduled.orchestrator import execute_schedule_operation_orchestrator
        from durabletask.scheduled.schedule_entity import ENTITY_NAME, Schedule

        entity: type[Schedule] = Schedule
        if clock is not None:
            entity = type("Schedule", (Schedule,), {"clock": staticmethod(clock)})
        self.add_entity(entity, ENTITY_NAME)
        self.add_orchestrator(execute_schedule_operation_orchestrator)
        self.add_capability(pb.WORKER_CAPABILITY_SCHEDULED_TASKS)

    def configure_streams(self, *, max_bytes_per_instance: int) -> None:
        """Set how much of each instance's stream (``ctx.publish``) the entities hosted here retain.

        Past ``max_bytes_per_instance`` the oldest items are dropped, and subscribers that had not read them see
        one ``$dropped`` marker instead (docs/streams.md). Every worker hosts the stream entities with the default
        (64 MiB); give every worker of a task hub the same value. Call before :meth:`start`. Also registers the
        stream entities, so a worker that sends work-item filters takes their work.

        Args:
            max_bytes_per_instance: The bytes of stream items kept per instance.

        Raises:
            ValueError: The value is not an int of at least one item's limit (64 KiB).
            RuntimeError: The worker is running.
        """
        self._require_stopped("Streams")
        for name, entity in stream_entities(max_bytes_per_instance).items():
            self._registry.add_entity(entity, name)

    def use_code_mismatch_policy(self, policy: CodeMismatchPolicy) -> None:
        """Choose what happens to an instance whose recorded code hash differs from the registered orchestrator's.

        Every client start records the orchestrator's code hash in the instance's tags. ``LOG`` (the default) runs
        it and logs a warning; ``ABANDON`` hands it back so a worker with matching code takes it; ``FAIL`` fails
        it; ``IGNORE`` runs it silently. An addition to the compatible API.

        Args:
            policy: A :class:`CodeMismatchPolicy` value.

        Raises:
            RuntimeError: The worker is running.
        """
        self._require_stopped("The code mismatch policy")
        self._registry.code_mismatch_policy = policy

    def use_versioning(self, version: VersioningOptions) -> None:
        """Set the versioning policy for orchestrations and the default sub-orchestration version.

        Args:
            version: The worker's version, which versions it accepts and what it does with the others.

        Raises:
            RuntimeError: The worker is running.
        """
        self._require_stopped("Versioning")
        self._registry.versioning = version

    @overload
    def use_work_item_filters(self) -> None: ...

    @overload
    def use_work_item_filters(self, filters: WorkItemFilters) -> None: ...

    @overload
    def use_work_item_filters(self, filters: None) -> None: ...

    def use_work_item_filters(self, filters: WorkItemFilters | None = _AUTO_GENERATE_FILTERS) -> None:
        """Choose the work items the backend sends this worker.

        Args:
            filters: Omit to generate filters from everything registered when the worker starts
                (with the worker's version under strict versioning); pass :class:`WorkItemFilters`
                for an explicit subset; pass ``None`` to send no filters (receive everything).
        """
        self._require_stopped("Work item filters")
        if filters is _AUTO_GENERATE_FILTERS:
            self._auto_generate_work_item_filters, self._work_item_filters = True, None
        elif filters is None:
            self._auto_generate_work_item_filters, self._work_item_filters = False, None
        elif isinstance(filters, WorkItemFilters):
            self._auto_generate_work_item_filters, self._work_item_filters = False, filters
        else:
            raise TypeError("filters must be a WorkItemFilters instance, None, or omitted.")

    def start(self) -> None:
        """Connect and start processing work items on background threads; returns immediately."""
        with self._lifecycle:
            if self._is_running:
                raise RuntimeError("The worker is already running.")
            if self._auto_generate_work_item_filters:
                self._work_item_filters = filters_from_registry(self._registry)
            self._logger.info("starting the gRPC worker for %s", self._host_address)
            self._run = _Run(self)
            self._is_running = True

    def stop(self, grace_period: float | None = None) -> None:
        """Stop taking work, let running work items finish, then disconnect.

        Args:
            grace_period: Seconds to wait for running work items (default 30); an addition to the
                compatible API (Microsoft's ``stop()`` takes no arguments). Work still running afterwards
                is abandoned: the log names each item (orchestration instance, or activity name, task ID
                and instance), its threads no longer keep the process alive, and its result is not
                delivered; the backend hands it out again when its lease expires.
        """
        with self._lifecycle:
            run, self._run = self._run, None
            if run is None:
                return
            self._logger.info("stopping the gRPC worker")
            try:
                run.stop(DEFAULT_STOP_GRACE_SECONDS if grace_period is None else grace_period)
            finally:
                self._is_running = False
            self._logger.info("the gRPC worker has stopped")

    def _startable_limits(self) -> dict[WorkKind, int]:
        activities = self._registry.activities.values()
        # Only when every activity is async do activities not need a thread each.
        async_kinds = [WorkKind.ACTIVITY] if activities and all(map(is_async_callable, activities)) else []
        return startable_limits(
            _limits(self._concurrency_options),
            threads=self._concurrency_options.maximum_thread_pool_workers or 1,
            async_kinds=async_kinds,
        )

    def _work_items_request(self) -> pb.GetWorkItemsRequest:
        # The backend leases at most this many of each kind to the stream at once: no more than can
        # start right away, so none waits in the worker while its lease runs out.
        limits = self._startable_limits()
        request = pb.GetWorkItemsRequest(
            maxConcurrentOrchestrationWorkItems=limits[WorkKind.ORCHESTRATION],
            maxConcurrentActivityWorkItems=limits[WorkKind.ACTIVITY],
            maxConcurrentEntityWorkItems=limits[WorkKind.ENTITY],
            capabilities=cast(Any, sorted(self._capabilities)),  # unknown values pass through as ints
        )
        if self._work_item_filters is not None:
            request.workItemFilters.CopyFrom(filters_to_proto(self._work_item_filters))
        return request

    def _open_channel(self) -> grpc.Channel:
        return create_channel(
            self._host_address,
            secure_channel=self._secure_channel,
            interceptors=self._interceptors,
            options=self._channel_options,
            metadata=self._metadata,
            root_certificates=self._root_certificates,
            single_threaded_streams=True,
        )

    def _replay_executor_factory(self, built_in: ExecutorFactory) -> ExecutorFactory:
        """The replay executor each orchestration turn runs on; the built-in one unless a subclass returns another.

        The one replaceable runner, for tests that drive the stream loop with a scripted executor.
        """
        return built_in


def _limits(options: ConcurrencyOptions) -> dict[WorkKind, int]:
    # ConcurrencyOptions fills every default in, so these are always set.
    return {
        WorkKind.ORCHESTRATION: options.maximum_concurrent_orchestration_work_items or 1,
        WorkKind.ACTIVITY: options.maximum_concurrent_activity_work_items or 1,
        WorkKind.ENTITY: options.maximum_concurrent_entity_work_items or 1,
    }


class _Run:
    """Everything one start()..stop() cycle owns: channel, work-item pools, stream loop and its thread."""

    def __init__(self, worker: TaskHubGrpcWorker) -> None:
        logger = worker._logger
        options = worker._concurrency_options
        self._logger = logger
        self._stopping = threading.Event()  # set when stop() begins: results are no longer retried
        self.pools = WorkItemPools(
            worker._startable_limits(), max_threads=options.maximum_thread_pool_workers or 1, logger=logger
        )
        store = worker._payload_store
        boundary = PayloadBoundary(store) if store is not None else None
        # Orchestration and activity payloads stay out of their work items, taken when decoded; an executor
        # of a subclass's own cannot take them, so its work items are restored in place.
        fetched = FetchedPayloads(store) if store is not None else None
        limit = payload_limit(store)
        built_in = default_executor_factory(
            worker._registry,
            logger,
            worker._maximum_timer_interval,
            worker._data_converter,
            worker._exception_properties_provider,
            payload_limit=limit,
            payloads=fetched,
        )
        executor_factory = worker._replay_executor_factory(built_in)
        own_executor = executor_factory is not built_in
        fetched_kinds = frozenset({"activityRequest"} | (set() if own_executor else {"orchestratorRequest"}))
        self.channels = ChannelProvider(worker._channel, worker._open_channel)
        # A fresh cache per run: a new stream means the backend resends full histories anyway.
        keep = worker._extended_sessions
        self.sessions: SessionCache[Executor] | None = SessionCache(keep) if keep.enabled else None
        runner = OrchestrationRunner(
            worker._registry,
            executor_factory,
            logger=logger,
            sessions=self.sessions,
            fetch_history=(
                boundary.history_fetcher(history_fetcher(self.channels))
                if boundary is not None
                else history_fetcher(self.channels)
            ),
            exception_properties_provider=worker._exception_properties_provider,
            tracer=OrchestrationTracer(emit=worker._emit_trace_spans, sessions=self.sessions is not None),
            store_payloads=boundary.result if boundary is not None else None,
        )
        self.sender = CompletionSender(logger, stopping=self._stopping)
        self.heartbeats = HeartbeatPump(self.channels, logger)
        handler = WorkItemHandler(
            self.pools,
            runner,
            ActivityRunner(
                worker._registry,
                logger=logger,
                data_converter=worker._data_converter,
                exception_properties_provider=worker._exception_properties_provider,
                emit_trace_spans=worker._emit_trace_spans,
                payload_limit=limit,
                payloads=fetched,
                heartbeats=self.heartbeats,
                publishers=StreamTransport(self.channels, logger).publisher,
            ),
            self.sender,
            registry=worker._registry,
            logger=logger,
            entities=EntityRunner(
                worker._registry,
                logger=logger,
                data_converter=worker._data_converter,
                exception_properties_provider=worker._exception_properties_provider,
                emit_trace_spans=worker._emit_trace_spans,
                payload_limit=limit,
            ),
        )
        request = worker._work_items_request()
        self.payloads = (
            PayloadWorkItems(handler, boundary, logger, fetched=fetched, fetched_kinds=fetched_kinds)
            if boundary is not None
            else None
        )
        self.loop = StreamLoop(
            channels=self.channels,
            request=lambda: request,
            on_work_item=self.payloads or handler,
            resiliency=worker._resiliency_options,
            logger=logger,
            address=worker._host_address,
            before_leasing=self._deliver_first,
        )
        self.pools.start()
        self._thread = threading.Thread(target=self.loop.run, name="durabletask-work-items", daemon=True)
        self._thread.start()

    def _deliver_first(self, stopping: threading.Event) -> None:
        # Reconnected: results of work from before the disconnection go out before new work is asked for.
        waiting = self.sender.retrying
        if waiting:
            self._logger.info("delivering %d result(s) held back by the disconnection before asking for work", waiting)
            self.sender.wait_delivered(stopping)

    def stop(self, grace_period: float) -> None:
        # A result that cannot reach the backend now is not waited for: the work item is handed out again.
        self._stopping.set()
        self.loop.stop()
        self.pools.stop_accepting()
        self._thread.join()
        if self.payloads is not None:  # items still being restored are handed on (and back, as stopping)
            self.payloads.close()
        idle = self.pools.wait_idle(grace_period)
        if not idle:
            abandoned = self.pools.running()
            self._logger.warning(
                "stopping without waiting for %d work item(s) still running after the %.1fs grace period: %s. "
                "They are abandoned: the process can exit while they run, their results are not delivered, and the "
                "backend hands them out again once their leases expire",
                len(abandoned),
                grace_period,
                "; ".join(abandoned),
            )
        self.pools.close(wait=idle)
        self.heartbeats.close()
        # Completions already on the wire finish (bounded by their RPC timeout) before the channel closes.
        self.sender.close(timeout=self.sender.timeout or 30.0)
        self.channels.close()
