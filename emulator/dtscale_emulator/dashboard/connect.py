"""Async clients for the dashboard's hubs: a plain endpoint (an emulator) or a DTS connection string."""

from __future__ import annotations

import logging

from dtscale_emulator.dashboard.hubs import ClientFactory
from durabletask._client.async_client import AsyncTaskHubGrpcClient

# The clients log a line per call; the dashboard's own log says what matters.
QUIET = logging.getLogger("dtscale_emulator.dashboard.client")
QUIET.setLevel(logging.WARNING)


def endpoint_clients(
    endpoint: str, token: str | None = None, *, root_certificates: bytes | None = None
) -> ClientFactory:
    """One client per hub for ``host:port`` (or an ``https://`` / ``grpcs://`` URL), with an optional bearer.

    ``root_certificates`` (PEM) lets a TLS endpoint with its own certificate be trusted, as the emulator's is.
    """
    secure = endpoint.startswith(("https://", "grpcs://"))

    def make(hub: str) -> AsyncTaskHubGrpcClient:
        metadata = [("taskhub", hub)]
        if token:
            metadata.append(("authorization", f"Bearer {token}"))
        return AsyncTaskHubGrpcClient(
            host_address=endpoint,
            metadata=metadata,
            secure_channel=secure,
            logger=QUIET,
            root_certificates=root_certificates,
        )

    return make


def connection_string_clients(connection_string: str) -> tuple[ClientFactory, str]:
    """One managed-DTS client per hub (credentials from ``Authentication``), and the string's own task hub.

    Raises:
        ConnectionStringError: the string is invalid.
    """
    from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient
    from durabletask.azuremanaged.connection_string import parse_connection_string

    parsed = parse_connection_string(connection_string)
    arguments = parsed.client_arguments()

    def make(hub: str) -> AsyncTaskHubGrpcClient:
        return AsyncDurableTaskSchedulerClient(**{**arguments, "taskhub": hub}, logger=QUIET)

    return make, str(arguments["taskhub"])
