"""The blocking client: drives the shared operations over a ``grpc.Channel``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

import grpc

from durabletask import history
from durabletask._client import attach as attach_ops
from durabletask._client import call_plan
from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._client import streams as stream_ops
from durabletask._client.attach import AttachedOrchestration
from durabletask._client.base import ClientSettings, blocking
from durabletask._grpc.channel import ClientInterceptor, create_channel, intercept_given_channel
from durabletask._instance_models import (
    CleanEntityStorageResult,
    DataConverter,
    EntityQuery,
    OrchestrationQuery,
    OrchestrationState,
    OrchestrationStatus,
    Page,
    PurgeInstancesResult,
)
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._streams.wire import StreamItem
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.entities.entity_metadata import EntityMetadata
from durabletask.grpc_options import GrpcChannelOptions, GrpcClientResiliencyOptions
from durabletask.payload.store import PayloadStore

T = TypeVar("T")


class TaskHubGrpcClient:
    """Schedules and manages orchestrations and entities over gRPC, blocking the calling thread.

    Safe to share between threads. Like Microsoft's client, every call blocks the calling thread, also inside a
    running asyncio event loop (where it stalls the loop's other tasks until the RPC is done; prefer
    :class:`AsyncTaskHubGrpcClient` there). ``fail_in_event_loop=True`` turns such calls into errors.

    Args:
        host_address: ``host:port`` (``http(s)://`` or ``grpc(s)://`` selects TLS); default ``localhost:4001``.
        metadata: Headers sent with every call (e.g. ``[("taskhub", "my-hub")]``).
        log_handler: Deprecated; pass ``logger`` instead.
        log_formatter: Deprecated; pass ``logger`` instead.
        logger: Where to log; by default, as Microsoft's, a private ``durabletask-client`` logger prints one
            INFO line per call (and warnings) to stderr.
        channel: A channel to use instead of creating one (it is not closed by :meth:`close`).
        secure_channel: Use TLS when the address has no scheme.
        interceptors: Extra client interceptors.
        channel_options: Message size, keepalive and transport retry settings.
        resiliency_options: When to rebuild the channel after repeated transport failures.
        default_version: Version given to new orchestrations that do not name one.
        payload_store: Where payloads over its threshold go, and come back from (see :mod:`durabletask.payload`).
        data_converter: Serializes inputs and decodes outputs; default: the JSON text Microsoft's converter writes.
        emit_trace_spans: Record OpenTelemetry spans (with ``opentelemetry-api``); ``False`` still sends the
            caller's trace context, as Microsoft's SDK does.
        root_certificates: PEM CA certificates to trust for TLS (an addition to the compatible API).
        fail_in_event_loop: Raise :class:`~durabletask.client.SyncCallInEventLoopError` instead of blocking in
            a thread running an asyncio event loop (default ``False``, as Microsoft's); an addition to the API.
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
        resiliency_options: GrpcClientResiliencyOptions | None = None,
        default_version: str | None = None,
        payload_store: PayloadStore | None = None,
        data_converter: DataConverter | None = None,
        emit_trace_spans: bool = True,
        root_certificates: bytes | None = None,
        fail_in_event_loop: bool = False,
    ) -> None:
        self._fail_in_event_loop = fail_in_event_loop
        self._settings = ClientSettings(
            log_name="client",
            host_address=host_address,
            metadata=metadata,
            log_handler=log_handler,
            log_formatter=log_formatter,
            logger=logger,
            secure_channel=secure_channel,
            channel_options=channel_options,
            resiliency_options=resiliency_options,
            default_version=default_version,
            payload_store=payload_store,
            data_converter=data_converter,
            emit_trace_spans=emit_trace_spans,
            root_certificates=root_certificates,
        )
        self._logger = self._settings.logger
        self._interceptors = list(interceptors or ())
        self._owns_channel = channel is None
        self._lock = threading.Lock()
        self._retired: list[grpc.Channel] = []
        if channel is None:
            channel = self._new_channel()
        else:
            channel = intercept_given_channel(channel, self._settings.metadata, self._interceptors)
        self._channel = channel
        self._stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        self.default_version = default_version

    @property
    def emit_trace_spans(self) -> bool:
        """Whether this client records OpenTelemetry producer spans for new orchestrations and raised events."""
        return self._settings.emit_trace_spans

    def _new_channel(self) -> grpc.Channel:
        s = self._settings
        return create_channel(
            s.host_address,
            secure_channel=s.secure_channel,
            interceptors=self._interceptors,
            options=s.channel_options,
            metadata=s.metadata,
            root_certificates=s.root_certificates,
        )

    def _rebuild_channel(self) -> None:
        # In-flight calls on the old channel keep running; it is closed with the client.
        with self._lock:
            self._retired.append(self._channel)
            self._channel = self._new_channel()
            self._stub = pb_grpc.TaskHubSidecarServiceStub(self._channel)
        self._logger.warning(
            "rebuilt the gRPC channel to %s after repeated transport failures", self._settings.host_address
        )

    def close(self) -> None:
        """Close the channel if this client created it (a channel passed in stays open)."""
        if not self._owns_channel:
            return
        with self._lock:
            channels, self._retired = [*self._retired, self._channel], []
        for channel in channels:
            channel.close()

    def __enter__(self) -> TaskHubGrpcClient:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    def _call(self, request: rq.RpcRequest) -> Any:
        return self._perform(call_plan.call(self._settings, request))

    def _run(self, operation: ops.Operation[T]) -> T:
        return self._perform(call_plan.run(self._settings, operation))

    def _perform(self, plan: call_plan.Plan[T]) -> T:
        return call_plan.drive(plan, self._step)  # blocking I/O

    def _step(self, step: call_plan.Step) -> Any:
        payloads = self._settings.payloads
        if isinstance(step, call_plan.Invoke):
            return call_plan.invoke(getattr(self._stub, step.request.method), step)
        if isinstance(step, call_plan.Pause):
            time.sleep(step.seconds)
        elif isinstance(step, call_plan.RebuildChannel):
            if self._owns_channel:
                self._rebuild_channel()
        elif isinstance(step, call_plan.StorePayloads) and payloads is not None:
            payloads.outgoing(step.message)
        elif isinstance(step, call_plan.FetchPayloads) and payloads is not None:
            payloads.incoming(step.response)
        return None

    # --------------------------------------------------------------------------------------- orchestrations

    @blocking
    def schedule_new_orchestration(
        self,
        orchestrator: Callable[..., Any] | str,
        *,
        input: Any | None = None,
        instance_id: str | None = None,
        start_at: datetime | None = None,
        reuse_id_policy: Any | None = None,
        tags: dict[str, str] | None = None,
        version: str | None = None,
    ) -> str:
        """Start a new orchestration instance and return its ID.

        Args:
            orchestrator: The orchestrator function or its registered name.
            input: JSON-serializable input (at most 1 MiB once serialized).
            instance_id: The ID to use; a random one by default.
            start_at: Do not start before this time.
            reuse_id_policy: Which statuses of an existing instance with this ID may be replaced: a list of
                :class:`OrchestrationStatus` or an ``OrchestrationIdReusePolicy`` message.
            tags: String tags stored with the instance.
            version: The orchestration version; ``default_version`` when omitted.
        """
        operation = ops.schedule_new_orchestration(
            orchestrator,
            input=input,
            instance_id=instance_id,
            start_at=start_at,
            reuse_id_policy=reuse_id_policy,
            tags=tags,
            version=version or self.default_version,
            converter=self._settings.converter,
            emit_trace_spans=self._settings.emit_trace_spans,
            payload_limit=self._settings.payload_limit,
        )
        return self._run(operation)

    @blocking
    def get_orchestration_state(self, instance_id: str, *, fetch_payloads: bool = True) -> OrchestrationState | None:
        """The instance's current state, or ``None`` if it does not exist.

        Args:
            instance_id: The instance's ID.
            fetch_payloads: Include the input, output and custom status (``False`` leaves them ``None``).
        """
        return self._run(
            ops.get_orchestration_state(instance_id, fetch_payloads=fetch_payloads, converter=self._settings.converter)
        )

    @blocking
    def get_orchestration_history(
        self, instance_id: str, *, execution_id: str | None = None, for_work_item_processing: bool = False
    ) -> list[history.HistoryEvent]:
        """The instance's full history, oldest event first.

        Args:
            instance_id: The instance's ID.
            execution_id: Sent as the request's ``executionId`` (the emulator returns the whole history regardless).
            for_work_item_processing: Sent as ``forWorkItemProcessing``, the flag a worker sets when it reads history.
        """
        return self._run(
            ops.get_orchestration_history(
                instance_id, execution_id=execution_id, for_work_item_processing=for_work_item_processing
            )
        )

    @blocking
    def list_instance_ids(
        self,
        runtime_status: list[OrchestrationStatus] | None = None,
        completed_time_from: datetime | None = None,
        completed_time_to: datetime | None = None,
        page_size: int | None = None,
        continuation_token: str | None = None,
    ) -> Page[str]:
        """One page of instance IDs; pass the returned ``continuation_token`` back for the next page.

        Args:
            runtime_status: Only instances in these statuses.
            completed_time_from: Only instances completed at or after this time.
            completed_time_to: Only instances completed at or before this time.
            page_size: At most this many IDs; the backend's default when ``None``.
            continuation_token: The previous page's ``continuation_token``; the first page when ``None``.
        """
        return self._run(
            ops.list_instance_ids(runtime_status, completed_time_from, completed_time_to, page_size, continuation_token)
        )

    @blocking
    def get_all_orchestration_states(
        self, orchestration_query: OrchestrationQuery | None = None
    ) -> list[OrchestrationState]:
        """Every instance matching ``orchestration_query`` (all pages are fetched).

        Args:
            orchestration_query: Time, status and ID-prefix filters and the page size; every instance when ``None``.
        """
        return self._run(ops.get_all_orchestration_states(orchestration_query, converter=self._settings.converter))

    @blocking
    def wait_for_orchestration_start(
        self, instance_id: str, *, fetch_payloads: bool = False, timeout: float = 60
    ) -> OrchestrationState | None:
        """Block until the instance leaves ``PENDING``.

        Args:
            instance_id: The instance's ID.
            fetch_payloads: Include the input, output and custom status in the returned state.
            timeout: Seconds to wait.

        Raises:
            TimeoutError: ``timeout`` seconds passed first.
        """
        return self._run(
            ops.wait_for_orchestration(
                "WaitForInstanceStart",
                instance_id,
                fetch_payloads=fetch_payloads,
                timeout=timeout,
                converter=self._settings.converter,
            )
        )

    @blocking
    def wait_for_orchestration_completion(
        self, instance_id: str, *, fetch_payloads: bool = True, timeout: float = 60
    ) -> OrchestrationState | None:
        """Block until the instance completes, fails or is terminated.

        Args:
            instance_id: The instance's ID.
            fetch_payloads: Include the input, output and custom status in the returned state.
            timeout: Seconds to wait.

        Raises:
            TimeoutError: ``timeout`` seconds passed first.
        """
        return self._run(
            ops.wait_for_orchestration(
                "WaitForInstanceCompletion",
                instance_id,
                fetch_payloads=fetch_payloads,
                timeout=timeout,
                converter=self._settings.converter,
            )
        )

    @blocking
    def raise_orchestration_event(self, instance_id: str, event_name: str, *, data: Any | None = None) -> None:
        """Send an external event to the instance.

        Args:
            instance_id: The receiving instance.
            event_name: The event's name (``wait_for_external_event`` matches it case-insensitively).
            data: The event's JSON-serializable payload (at most 1 MiB once serialized).
        """
        self._run(
            ops.raise_orchestration_event(
                instance_id,
                event_name,
                data=data,
                converter=self._settings.converter,
                emit_trace_spans=self._settings.emit_trace_spans,
                payload_limit=self._settings.payload_limit,
            )
        )

    @blocking
    def terminate_orchestration(self, instance_id: str, *, output: Any | None = None, recursive: bool = True) -> None:
        """Terminate the instance (and, by default, its sub-orchestrations).

        Args:
            instance_id: The instance to terminate.
            output: Recorded as the terminated instance's output.
            recursive: Also terminate its sub-orchestrations.
        """
        request = rq.build_terminate_orchestration_request(
            instance_id,
            output=output,
            recursive=recursive,
            converter=self._settings.converter,
            payload_limit=self._settings.payload_limit,
        )
        self._run(ops.fire(request))

    @blocking
    def suspend_orchestration(self, instance_id: str, *, reason: str | None = None) -> None:
        """Pause the instance until it is resumed.

        Args:
            instance_id: The instance to suspend.
            reason: Recorded in the instance's history.
        """
        self._run(ops.fire(rq.build_suspend_orchestration_request(instance_id, reason=reason)))

    @blocking
    def resume_orchestration(self, instance_id: str, *, reason: str | None = None) -> None:
        """Resume a suspended instance.

        Args:
            instance_id: The instance to resume.
            reason: Recorded in the instance's history.
        """
        self._run(ops.fire(rq.build_resume_orchestration_request(instance_id, reason=reason)))

    @blocking
    def attach_orchestration(
        self,
        orchestrator: Callable[..., Any] | str,
        *,
        instance_id: str,
        input: Any | None = None,
        version: str | None = None,
        tags: dict[str, str] | None = None,
        rewind_if_failed: bool = False,
    ) -> AttachedOrchestration:
        """Start ``instance_id`` or attach to it: the carrier run that finishes a crashed process's work.

        The instance's recorded fingerprint (orchestrator name, version, input hash and code hash) must match
        this call, so a second process never starts a second copy of the business operation. No such instance:
        start it (``STARTED``); running, pending or suspended: attach (``ATTACHED``); completed: reuse the
        recorded result, run nothing (``ALREADY_COMPLETED``); failed: rewind it if ``rewind_if_failed``
        (``REWOUND``). Returns a handle whose ``wait()``/``result()`` give the outcome. An addition to the
        compatible API.

        Args:
            orchestrator: The orchestrator function or its registered name.
            instance_id: The instance to start or attach to.
            input: The orchestration's input (part of the fingerprint).
            version: The orchestration version; ``default_version`` when omitted.
            tags: String tags stored with an instance this call starts.
            rewind_if_failed: Rewind a failed instance instead of raising.

        Raises:
            AttachedInstanceFailedError: The instance failed and ``rewind_if_failed`` is false.
            FingerprintMismatchError: The instance's fingerprint differs (the message lists which parts).
        """
        action, state = self._run(
            attach_ops.attach_orchestration(
                orchestrator,
                instance_id=instance_id,
                input=input,
                version=version or self.default_version,
                tags=tags,
                rewind_if_failed=rewind_if_failed,
                converter=self._settings.converter,
                payload_limit=self._settings.payload_limit,
            )
        )
        return AttachedOrchestration(instance_id, action, state, self)

    @blocking
    def rewind_orchestration(self, instance_id: str, *, reason: str | None = None) -> None:
        """Retry a failed instance from its failed steps, keeping the results that succeeded.

        Args:
            instance_id: The failed instance.
            reason: Recorded in the instance's history.
        """
        self._run(ops.fire(rq.build_rewind_orchestration_request(instance_id, reason=reason)))

    @blocking
    def restart_orchestration(self, instance_id: str, *, restart_with_new_instance_id: bool = False) -> str:
        """Start the instance over with its original input; returns the (possibly new) instance ID.

        Args:
            instance_id: The instance to start over.
            restart_with_new_instance_id: Give the new run a random instance ID instead of reusing this one.
        """
        return self._run(
            ops.restart_orchestration(instance_id, restart_with_new_instance_id=restart_with_new_instance_id)
        )

    @blocking
    def purge_orchestration(self, instance_id: str, recursive: bool = True) -> PurgeInstancesResult:
        """Delete a finished instance's state and history.

        With a payload store whose options set ``delete_payloads_on_purge``, its stored payloads are deleted too.

        Args:
            instance_id: The instance to delete.
            recursive: Also purge its sub-orchestrations.
        """
        request = rq.build_purge_orchestration_request(instance_id, recursive)
        return self._purge(request)

    def _purge(self, request: rq.RpcRequest) -> PurgeInstancesResult:
        """Purge, then remove the purged instances' streams and (with a store that deletes them) payloads."""
        payloads = self._settings.purges_payloads()
        result, owners = self._run(stream_ops.purge(request, self._settings.converter, payloads=payloads))
        self._settings.delete_payloads(owners)
        return result

    @blocking
    def purge_orchestrations_by(
        self,
        created_time_from: datetime | None = None,
        created_time_to: datetime | None = None,
        runtime_status: list[OrchestrationStatus] | None = None,
        recursive: bool = False,
        timeout: timedelta | None = None,
    ) -> PurgeInstancesResult:
        """Delete every finished instance matching the filter.

        With a payload store whose options set ``delete_payloads_on_purge``, their stored payloads go too.

        Args:
            created_time_from: Only instances created at or after this time.
            created_time_to: Only instances created at or before this time.
            runtime_status: Only instances in these statuses.
            recursive: Also purge their sub-orchestrations.
            timeout: Bounds the backend's work on the purge (not the call).
        """
        request = rq.build_purge_orchestrations_by_request(
            created_time_from, created_time_to, runtime_status, recursive, timeout
        )
        return self._purge(request)

    def subscribe(
        self,
        instance_id: str,
        topics: Sequence[str] | None = None,
        after: str | None = None,
        timeout: float | None = None,
    ) -> Iterator[StreamItem]:
        """The instance's published items (``ctx.publish``), in order, as they arrive (docs/streams.md).

        The iteration ends once the instance has ended (any terminal status) and every item has been delivered.

        Args:
            instance_id: The orchestration instance.
            topics: Only items of these topics (all topics when ``None``).
            after: Resume after this cursor (an item's ``id``), e.g. from an earlier subscription.
            timeout: Seconds from this call after which waiting for more items raises ``TimeoutError``
                (items that keep arriving are still delivered).

        Raises:
            StreamNotFoundError: The instance does not exist.
            StreamCursorError: ``after`` is malformed or belongs to another instance (raised here, at the call).
        """
        steps = stream_ops.plan(instance_id, topics, after, timeout, self._settings.converter)
        return stream_ops.follow(steps, instance_id, self._settings.converter, self._run)

    # --------------------------------------------------------------------------------------------- entities

    @blocking
    def signal_entity(
        self,
        entity_instance_id: EntityInstanceId,
        operation_name: str,
        input: Any | None = None,
        signal_time: datetime | None = None,
    ) -> None:
        """Send a one-way operation to an entity, optionally delivered at ``signal_time``.

        Args:
            entity_instance_id: The target entity.
            operation_name: The operation to call.
            input: The operation's JSON-serializable input.
            signal_time: Deliver no earlier than this time; at once when ``None``.
        """
        request = rq.build_signal_entity_request(
            entity_instance_id,
            operation_name,
            input,
            signal_time,
            converter=self._settings.converter,
            payload_limit=self._settings.payload_limit,
        )
        self._run(ops.signal_entity(request))

    @blocking
    def get_entity(self, entity_instance_id: EntityInstanceId, include_state: bool = True) -> EntityMetadata | None:
        """The entity's metadata (and state), or ``None`` if it does not exist.

        Args:
            entity_instance_id: The entity.
            include_state: Include its state.
        """
        return self._run(ops.get_entity(entity_instance_id, include_state, converter=self._settings.converter))

    @blocking
    def get_all_entities(self, entity_query: EntityQuery | None = None) -> list[EntityMetadata]:
        """Every entity matching ``entity_query`` (all pages are fetched).

        Args:
            entity_query: Name-prefix and last-modified filters and the page size; every entity when ``None``.
        """
        return self._run(ops.get_all_entities(entity_query, converter=self._settings.converter))

    @blocking
    def clean_entity_storage(
        self, remove_empty_entities: bool = True, release_orphaned_locks: bool = True
    ) -> CleanEntityStorageResult:
        """Remove empty entities and release locks held by finished orchestrations.

        Args:
            remove_empty_entities: Delete entities without state and without pending work.
            release_orphaned_locks: Release locks held by orchestrations that have ended.
        """
        return self._run(ops.clean_entity_storage(remove_empty_entities, release_orphaned_locks))
