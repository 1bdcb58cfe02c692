"""The worker for the managed Durable Task Scheduler: a :class:`TaskHubGrpcWorker` with scheduler auth."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import grpc

from durabletask._grpc.channel import ClientInterceptor
from durabletask.azuremanaged._metadata import default_channel_options, new_worker_id, sync_interceptors
from durabletask.azuremanaged._tokens import TokenCredentialLike
from durabletask.azuremanaged.connection_string import parse_connection_string
from durabletask.azuremanaged.internal.durabletask_grpc_interceptor import (
    DTSDefaultClientInterceptorImpl as DTSDefaultClientInterceptorImpl,  # importable here, as in Microsoft's
)
from durabletask.exception_properties import ExceptionPropertiesProvider
from durabletask.grpc_options import GrpcChannelOptions, GrpcWorkerResiliencyOptions
from durabletask.payload.store import PayloadStore
from durabletask.serialization import DataConverter
from durabletask.worker import ConcurrencyOptions, TaskHubGrpcWorker

__all__ = ["DurableTaskSchedulerWorker"]


class DurableTaskSchedulerWorker(TaskHubGrpcWorker):
    """Runs orchestrators, activities and entities for one task hub of a Durable Task Scheduler.

    Every call carries the ``taskhub``, ``x-user-agent`` and ``workerid`` headers and, when a credential
    is given, ``authorization: Bearer <token>``. The token is requested on first use and replaced
    shortly before it expires. Timers are not split into chunks, since the scheduler handles long timers.

    Args:
        host_address: Scheduler endpoint, e.g. ``https://myscheduler.westus3.durabletask.io``; an
            ``http://`` address (the emulator) connects without TLS.
        taskhub: Task hub name; must not be empty.
        token_credential: An azure-identity ``TokenCredential``; ``None`` sends no token (emulator).
        resource_id: Token audience override. ``None``/empty picks ``https://durabletask.io`` (or
            ``https://durabletask.azure.us`` when ``REGION_NAME`` is a US Government region); trailing
            slashes and ``/.default`` are removed.
        channel: A ready channel used as given (as in the compatible API): it must carry the scheduler
            headers itself, e.g. via ``DTSDefaultClientInterceptorImpl``.
        secure_channel: Use TLS when ``host_address`` has no scheme (default ``True``).
        interceptors: Extra gRPC interceptors, run before the scheduler's.
        channel_options: Channel settings; ``None`` uses keepalive pings and 16 MiB message limits.
        resiliency_options: Handshake deadline, silent-stream timeout and reconnect backoff.
        concurrency_options: Per-kind limits on work items running at once.
        payload_store: Large payloads go to this store above its threshold (see :mod:`durabletask.payload`).
        data_converter: Forwarded to :class:`TaskHubGrpcWorker`.
        log_handler: Deprecated; a handler for the worker's logger.
        log_formatter: Deprecated; a formatter for that handler.
        logger: The logger to write to.
        exception_properties_provider: Forwarded to :class:`TaskHubGrpcWorker`.

    Raises:
        ValueError: ``taskhub`` is empty, or ``resource_id`` is empty once normalised.
    """

    def __init__(
        self,
        *,
        host_address: str,
        taskhub: str,
        token_credential: TokenCredentialLike | None,
        resource_id: str | None = None,
        channel: grpc.Channel | None = None,
        secure_channel: bool = True,
        interceptors: Sequence[ClientInterceptor] | None = None,
        channel_options: GrpcChannelOptions | None = None,
        resiliency_options: GrpcWorkerResiliencyOptions | None = None,
        concurrency_options: ConcurrencyOptions | None = None,
        payload_store: PayloadStore | None = None,
        data_converter: DataConverter | None = None,
        log_handler: logging.Handler | None = None,
        log_formatter: logging.Formatter | None = None,
        logger: logging.Logger | None = None,
        exception_properties_provider: ExceptionPropertiesProvider | None = None,
    ) -> None:
        self._worker_id = new_worker_id()
        chain = sync_interceptors(
            interceptors,
            taskhub=taskhub,
            token_credential=token_credential,
            resource_id=resource_id,
            worker_id=self._worker_id,
        )
        super().__init__(
            host_address=host_address,
            # The scheduler interceptor carries every header; the base class needs none of its own.
            metadata=None,
            log_handler=log_handler,
            log_formatter=log_formatter,
            logger=logger,
            channel=channel,
            secure_channel=secure_channel,
            interceptors=chain,
            channel_options=channel_options if channel_options is not None else default_channel_options(),
            resiliency_options=resiliency_options,
            concurrency_options=concurrency_options,
            maximum_timer_interval=None,
            payload_store=payload_store,
            data_converter=data_converter,
            exception_properties_provider=exception_properties_provider,
        )

    @property
    def worker_id(self) -> str:
        """The ``workerid`` header value: ``<hostname>:<pid>:<uuid4>``."""
        return self._worker_id

    @classmethod
    def from_connection_string(cls, connection_string: str, **kwargs: Any) -> DurableTaskSchedulerWorker:
        """A worker configured by a scheduler connection string (an addition of this SDK).

        ``Endpoint``, ``TaskHub``, ``ResourceId`` and the credential chosen by ``Authentication`` come
        from the string; other keyword arguments (e.g. ``concurrency_options``) are passed through.

        Args:
            connection_string: ``Key=Value;...`` pairs, as for the client's ``from_connection_string``.
            **kwargs: Further constructor arguments.

        Raises:
            ConnectionStringError: the string is invalid (see
                :mod:`durabletask.azuremanaged.connection_string`).
        """
        return cls(**parse_connection_string(connection_string).client_arguments(), **kwargs)
