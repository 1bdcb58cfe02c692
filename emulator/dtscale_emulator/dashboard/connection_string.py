"""Durable Task Scheduler connection strings (``Endpoint=...;Authentication=...;TaskHub=...``) for the dashboard.

The format is the one the Durable Task SDKs share. Keys are case-insensitive; segments are ``Key=Value`` split on
``;`` (empty ones skipped, a repeated key keeps its last value, only the first ``=`` splits):

- ``Endpoint`` (required): ``https://host[:port]`` or a bare ``host[:port]`` (TLS), ``http://host:port`` (plaintext).
- ``TaskHub`` (required): the task hub.
- ``Authentication`` (required): ``DefaultAzure``, ``ManagedIdentity``, ``WorkloadIdentity``, ``Environment``,
  ``AzureCli``, ``AzurePowerShell``, ``VisualStudioCode``, ``InteractiveBrowser``, or ``None`` (no token).
- ``ClientID``, ``TenantId``, ``TokenFilePath``, ``AdditionallyAllowedTenants`` (comma-separated): identity settings.
- ``ResourceId``: the token audience; ``AuthorityHost``: the Entra authority (``https://``) of a sovereign cloud.

Every value but ``None`` needs azure-identity, imported only then (the ``azure`` extra of dtscale-emulator).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dtscale_emulator.dashboard.credentials import audience

KEYS = (
    "Endpoint",
    "TaskHub",
    "Authentication",
    "ClientID",
    "TenantId",
    "TokenFilePath",
    "AdditionallyAllowedTenants",
    "ResourceId",
    "AuthorityHost",
)
AUTHENTICATIONS = (
    "DefaultAzure",
    "ManagedIdentity",
    "WorkloadIdentity",
    "Environment",
    "AzureCli",
    "AzurePowerShell",
    "VisualStudioCode",
    "InteractiveBrowser",
    "None",
)
MISSING_AZURE = "pip install 'dtscale-emulator[azure]'"


class InvalidConnectionStringError(ValueError):
    """A connection string the dashboard cannot use; the message names the key."""


class MissingAzureIdentityError(ImportError):
    """The connection string asks for Azure credentials and azure-identity is not installed."""


@dataclass(frozen=True)
class SchedulerConnection:
    """The parts of a connection string the dashboard uses."""

    target: str  # host:port, without a scheme
    secure: bool
    task_hub: str
    authentication: str
    client_id: str | None = None
    tenant_id: str | None = None
    token_file_path: str | None = None
    allowed_tenants: tuple[str, ...] = ()
    resource_id: str | None = None
    authority_host: str | None = None

    @property
    def scope(self) -> str:
        """The OAuth scope of the scheduler's tokens."""
        return audience(self.resource_id) + "/.default"

    def credential(self) -> Any | None:
        """A new azure-identity credential for ``Authentication`` (``None`` for ``None``).

        Raises:
            MissingAzureIdentityError: azure-identity is not installed.
        """
        if self.authentication == "None":
            return None
        try:
            identity = importlib.import_module("azure.identity")
        except ImportError:
            raise MissingAzureIdentityError(
                f"Authentication={self.authentication} needs azure-identity: {MISSING_AZURE}"
            ) from None
        return _CREDENTIALS[self.authentication](identity, self)


def _segments(text: str) -> dict[str, str]:
    if not isinstance(text, str) or not text.strip():
        raise InvalidConnectionStringError("the connection string is empty")
    canonical = {key.lower(): key for key in KEYS}
    values: dict[str, str] = {}
    for raw in text.split(";"):
        segment = raw.strip()
        if not segment:
            continue
        key, equals, value = segment.partition("=")
        key = key.strip()
        if not equals or not key:
            raise InvalidConnectionStringError(f"connection string segment {segment!r} is not Key=Value")
        if key.lower() not in canonical:
            raise InvalidConnectionStringError(f"unknown connection string key {key!r}; the keys are {', '.join(KEYS)}")
        values[canonical[key.lower()]] = value.strip()
    return values


def _endpoint(value: str) -> tuple[str, bool]:
    """``(host:port, TLS)``: ``http``/``grpc`` are plaintext, ``https``/``grpcs`` and a bare address TLS."""
    if "://" not in value:
        return value.rstrip("/"), True
    parts = urlsplit(value)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "grpc", "grpcs") or not parts.netloc:
        raise InvalidConnectionStringError(
            f"Endpoint {value!r} is not an address: use https://host[:port], http://host:port or host[:port]"
        )
    return parts.netloc, scheme in ("https", "grpcs")


def _authentication(value: str) -> str:
    for name in AUTHENTICATIONS:
        if name.lower() == value.lower():
            return name
    raise InvalidConnectionStringError(
        f"Authentication {value!r} is not supported; use one of {', '.join(AUTHENTICATIONS)}"
    )


def _resource_id(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return audience(value)
    except ValueError as error:
        raise InvalidConnectionStringError(f"ResourceId {error}") from None


def _authority(value: str | None) -> str | None:
    if value and (urlsplit(value).scheme.lower() != "https" or not urlsplit(value).netloc):
        raise InvalidConnectionStringError(f"AuthorityHost {value!r} must be an https:// URL")
    return value or None


def parse(text: str) -> SchedulerConnection:
    """The connection string's parts.

    Raises:
        InvalidConnectionStringError: a malformed segment, an unknown key, a missing ``Endpoint``, ``TaskHub`` or
            ``Authentication``, or a value that is not valid for its key; the message names the key.
    """
    values = _segments(text)
    for key in ("Endpoint", "TaskHub", "Authentication"):
        if not values.get(key):
            raise InvalidConnectionStringError(f"the connection string has no {key}")
    target, secure = _endpoint(values["Endpoint"])
    tenants = values.get("AdditionallyAllowedTenants", "")
    return SchedulerConnection(
        target=target,
        secure=secure,
        task_hub=values["TaskHub"],
        authentication=_authentication(values["Authentication"]),
        client_id=values.get("ClientID") or None,
        tenant_id=values.get("TenantId") or None,
        token_file_path=values.get("TokenFilePath") or None,
        allowed_tenants=tuple(t.strip() for t in tenants.split(",") if t.strip()),
        resource_id=_resource_id(values.get("ResourceId")),
        authority_host=_authority(values.get("AuthorityHost")),
    )


def _given(**options: Any) -> dict[str, Any]:
    # Unset options are left out so azure-identity applies its own defaults.
    return {name: value for name, value in options.items() if value not in (None, [], "")}


def _tenants(c: SchedulerConnection) -> list[str]:
    return list(c.allowed_tenants)


_Build = Callable[[Any, SchedulerConnection], Any]
_CREDENTIALS: dict[str, _Build] = {
    "DefaultAzure": lambda identity, c: identity.DefaultAzureCredential(
        **_given(
            managed_identity_client_id=c.client_id,
            workload_identity_client_id=c.client_id,
            workload_identity_tenant_id=c.tenant_id,
            additionally_allowed_tenants=_tenants(c),
            authority=c.authority_host,
        )
    ),
    "ManagedIdentity": lambda identity, c: identity.ManagedIdentityCredential(**_given(client_id=c.client_id)),
    "WorkloadIdentity": lambda identity, c: identity.WorkloadIdentityCredential(
        **_given(
            tenant_id=c.tenant_id,
            client_id=c.client_id,
            token_file_path=c.token_file_path,
            additionally_allowed_tenants=_tenants(c),
            authority=c.authority_host,
        )
    ),
    "Environment": lambda identity, c: identity.EnvironmentCredential(**_given(authority=c.authority_host)),
    "AzureCli": lambda identity, c: identity.AzureCliCredential(
        **_given(tenant_id=c.tenant_id, additionally_allowed_tenants=_tenants(c))
    ),
    "AzurePowerShell": lambda identity, c: identity.AzurePowerShellCredential(
        **_given(tenant_id=c.tenant_id, additionally_allowed_tenants=_tenants(c))
    ),
    "VisualStudioCode": lambda identity, c: identity.VisualStudioCodeCredential(
        **_given(tenant_id=c.tenant_id, additionally_allowed_tenants=_tenants(c))
    ),
    "InteractiveBrowser": lambda identity, c: identity.InteractiveBrowserCredential(
        **_given(
            client_id=c.client_id,
            tenant_id=c.tenant_id,
            additionally_allowed_tenants=_tenants(c),
            authority=c.authority_host,
        )
    ),
}
