"""Endpoint clients for the dashboard's hubs: a plain endpoint (an emulator) or a DTS connection string."""

from __future__ import annotations

from dtscale_emulator.dashboard import connection_string
from dtscale_emulator.dashboard.credentials import CredentialBearer
from dtscale_emulator.dashboard.endpoint import BearerSource, EndpointClient, StaticBearer
from dtscale_emulator.dashboard.hubs import ClientFactory

_TLS = ("https://", "grpcs://")
_PLAIN = ("http://", "grpc://")


def split_address(address: str) -> tuple[str, bool]:
    """``(host:port, TLS)`` of ``host:port`` (plaintext) or an ``https://``/``grpcs://``/``http://`` URL."""
    text = address.strip()
    lowered = text.lower()
    for schemes, secure in ((_TLS, True), (_PLAIN, False)):
        for scheme in schemes:
            if lowered.startswith(scheme):
                return text[len(scheme) :].rstrip("/"), secure
    return text, False


def endpoint_clients(
    endpoint: str, token: str | None = None, *, root_certificates: bytes | None = None
) -> ClientFactory:
    """One client per hub for ``host:port`` (or an ``https://`` / ``grpcs://`` URL), with an optional bearer.

    ``root_certificates`` (PEM) lets a TLS endpoint with its own certificate be trusted, as the emulator's is.
    """
    target, secure = split_address(endpoint)
    bearer = StaticBearer(token) if token else None

    def make(hub: str) -> EndpointClient:
        return EndpointClient(target, hub, secure=secure, root_certificates=root_certificates, bearer=bearer)

    return make


def connection_string_clients(text: str) -> tuple[ClientFactory, str]:
    """One managed-DTS client per hub (credentials from ``Authentication``), and the string's own task hub.

    The hubs share one credential and its token.

    Raises:
        InvalidConnectionStringError: the string is invalid (a ``ValueError``).
        MissingAzureIdentityError: it asks for Azure credentials and azure-identity is not installed.
    """
    parsed = connection_string.parse(text)
    credential = parsed.credential()
    bearer: BearerSource | None = None if credential is None else CredentialBearer(credential, parsed.scope)

    def make(hub: str) -> EndpointClient:
        return EndpointClient(parsed.target, hub, secure=parsed.secure, bearer=bearer)

    return make, parsed.task_hub
