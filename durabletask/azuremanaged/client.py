"""Clients for the managed Durable Task Scheduler: the task hub clients with scheduler headers and auth."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio

from durabletask._grpc.channel import AsyncClientInterceptor, ClientInterceptor
from durabletask.azuremanaged._metadata import async_interceptors, default_channel_options, sync_interceptors
from durabletask.azuremanaged._tokens import AsyncTokenCredentialLike, TokenCredentialLike
from durabletask.azuremanaged.connection_string import parse_connection_string
from durabletask.azuremanaged.internal.durabletask_grpc_interceptor import (
    DTSAsyncDefaultClientInterceptorImpl as DTSAsyncDefaultClientInterceptorImpl,  # importable here, as in Microsoft's
)
from durabletask.azuremanaged.internal.durabletask_grpc_interceptor import (
    DTSDefaultClientInterceptorImpl as DTSDefaultClientInterceptorImpl,
)
from durabletask.client import AsyncTaskHubGrpcClient, TaskHubGrpcClient
from durabletask.grpc_options import GrpcChannelOptions, GrpcClientResiliencyOptions
from durabletask.payload.store import PayloadStore
from durabletask.serialization import DataConverter

__all__ = ["AsyncDurableTaskSchedulerClient", "DurableTaskSchedulerClient"]


def _channel_options(options: GrpcChannelOptions | None) -> GrpcChannelOptions:
    return options if options is not None else default_channel_options()


class DurableTaskSchedulerClient(TaskHubGrpcClient):
    """A blocking client for one task hub of a Durable Task Scheduler.

    Every call carries the ``taskhub`` and ``x-user-agent`` headers and, when a credential is given,
    ``authorization: Bearer <token>``. The token is requested on first use and replaced shortly
    before it expires; concurrent calls share one refresh.

    Args:
        host_address: Scheduler endpoint, e.g. ``https://myscheduler.westus3.durabletask.io``; an
            ``http://`` address (the emulator) connects without TLS.
        taskhub: Task hub name; must not be empty.
        token_credential: An azure-identity credential; ``None`` sends no token (emulator).
        resource_id: Token audience override. ``None``/empty picks ``https://durabletask.io`` (or
            ``https://durabletask.azure.us`` when ``REGION_NAME`` is a US Government region); trailing
            slashes and ``/.default`` are removed.
        channel: A ready channel to use instead of opening one; the scheduler headers are still added.
        secure_channel: Use TLS when ``host_address`` has no scheme (default ``True``).
        interceptors: Extra gRPC interceptors, run before the scheduler's.
        channel_options: Channel settings; ``None`` uses keepalive pings and 16 MiB message limits.
        resiliency_options: When to rebuild the channel after repeated transport failures.
        default_version: Version given to new orchestrations that do not name one.
        payload_store: Large payloads go to this store above its threshold (see :mod:`durabletask.payload`).
        data_converter: Forwarded to the base client.
        log_handler: Deprecated; a handler for the client's logger.
        log_formatter: Deprecated; a formatter for that handler.
        logger: The logger to write to.

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
        resiliency_options: GrpcClientResiliencyOptions | None = None,
        default_version: str | None = None,
        payload_store: PayloadStore | None = None,
        data_converter: DataConverter | None = None,
        log_handler: logging.Handler | None = None,
        log_formatter: logging.Formatter | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        chain = sync_interceptors(
            interceptors, taskhub=taskhub, token_credential=token_credential, resource_id=resource_id
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
            channel_options=_channel_options(channel_options),
            resiliency_options=resiliency_options,
            default_version=default_version,
            payload_store=payload_store,
            data_converter=data_converter,
        )

    @classmethod
    def from_connection_string(cls, connection_string: str, **kwargs: Any) -> DurableTaskSchedulerClient:
        """A client configured by a scheduler connection string (an addition of this SDK).

        ``Endpoint``, ``TaskHub``, ``ResourceId`` and the credential chosen by ``Authentication`` come
        from the string; other keyword arguments are passed through.

        Args:
            connection_string: ``Key=Value;...`` pairs, e.g.
                ``Endpoint=https://...;TaskHub=hub;Authentication=DefaultAzure``.
            **kwargs: Further constructor arguments (``host_address``, ``taskhub``, ``token_credential`` and
                ``resource_id`` come from the string).

        Raises:
            ConnectionStringError: the string is invalid (see
                :mod:`durabletask.azuremanaged.connection_string`).
        """
        return cls(**parse_connection_string(connection_string).client_arguments(), **kwargs)


class AsyncDurableTaskSchedulerClient(AsyncTaskHubGrpcClient):
    """An asyncio client for one task hub of a Durable Task Scheduler.

    Arguments and headers are as for :class:`DurableTaskSchedulerClient`, except that
    ``token_credential`` may also be an ``AsyncTokenCredential`` (``azure.identity.aio``); a blocking
    ``TokenCredential`` works too, its token requests then run in a worker thread. An asyncio channel
    cannot be wrapped after creation, so it cannot get the scheduler headers: ``channel`` is refused.

    Raises:
        ValueError: ``taskhub`` is empty, ``resource_id`` is empty once normalised, or ``channel`` is given
            (Microsoft's client would silently send it to the ``default`` task hub without a token).
    """

    def __init__(
        self,
        *,
        host_address: str,
        taskhub: str,
        token_credential: AsyncTokenCredentialLike | TokenCredentialLike | None,
        resource_id: str | None = None,
        channel: grpc.aio.Channel | None = None,
        secure_channel: bool = True,
        interceptors: Sequence[AsyncClientInterceptor] | None = None,
        channel_options: GrpcChannelOptions | None = None,
        resiliency_options: GrpcClientResiliencyOptions | None = None,
        default_version: str | None = None,
        payload_store: PayloadStore | None = None,
        data_converter: DataConverter | None = None,
        log_handler: logging.Handler | None = None,
        log_formatter: logging.Formatter | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        chain = async_interceptors(
            interceptors, taskhub=taskhub, token_credential=token_credential, resource_id=resource_id
        )
        super().__init__(
            host_address=host_address,
            metadata=None,
            log_handler=log_handler,
            log_formatter=log_formatter,
            logger=logger,
            channel=channel,
            secure_channel=secure_channel,
            interceptors=chain,
            channel_options=_channel_options(channel_options),
            resiliency_options=resiliency_options,
            default_version=default_version,
            payload_store=payload_store,
            data_converter=data_converter,
        )

    @classmethod
    def from_connection_string(cls, connection_string: str, **kwargs: Any) -> AsyncDurableTaskSchedulerClient:
        """An asyncio client configured by a scheduler connection string (an addition of this SDK).

        The credential built from ``Authentication`` is a blocking azure-identity credential; its token
        requests run in a worker thread, so no asyncio HTTP transport needs to be installed.

        Args:
            connection_string: ``Key=Value;...`` pairs, as for the sync client's ``from_connection_string``.
            **kwargs: Further constructor arguments.

        Raises:
            ConnectionStringError: the string is invalid.
        """
        return cls(**parse_connection_string(connection_string).client_arguments(), **kwargs)
