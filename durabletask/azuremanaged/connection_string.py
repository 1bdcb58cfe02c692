"""Durable Task Scheduler connection strings (``Endpoint=...;Authentication=...;TaskHub=...``).

This module is an addition of this SDK; Microsoft's Python package has no connection-string support,
but the .NET, Java and Go SDKs share the format, so one string can configure apps in every language.

Keys (case-insensitive; surrounding whitespace is ignored; empty segments are skipped; a repeated key
keeps its last value; only the first ``=`` of a segment separates key from value):

- ``Endpoint`` (required): scheduler address, e.g. ``https://myscheduler.westus3.durabletask.io`` or
  ``http://localhost:8080`` for the emulator. Without a scheme TLS is used.
- ``TaskHub`` (required): task hub name.
- ``Authentication`` (required, case-insensitive): ``DefaultAzure``, ``ManagedIdentity``,
  ``WorkloadIdentity``, ``Environment``, ``AzureCli``, ``AzurePowerShell``, ``VisualStudioCode``,
  ``InteractiveBrowser`` or ``None`` (no token, for the emulator).
- ``ClientID``: user-assigned managed identity or workload identity client ID (also forwarded to
  ``DefaultAzure`` for its managed and workload identity sources).
- ``TenantId``, ``TokenFilePath``, ``AdditionallyAllowedTenants`` (comma-separated): workload identity
  settings; ``TenantId`` also applies to the developer-tool credentials.
- ``ResourceId``: token audience override (see ``resource_id`` on the client).
- ``AuthorityHost``: Microsoft Entra authority for sovereign clouds (an ``https://`` URL).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from durabletask._errors import DurableTaskError
from durabletask.azuremanaged._tokens import TokenCredentialLike, resolve_resource_id

__all__ = [
    "AUTHENTICATION_TYPES",
    "ConnectionStringError",
    "DurableTaskSchedulerConnectionString",
    "parse_connection_string",
]

_KEYS = (
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
_CANONICAL_KEY = {key.lower(): key for key in _KEYS}
_REQUIRED = ("Endpoint", "TaskHub", "Authentication")
_ENDPOINT_SCHEMES = ("http", "https", "grpc", "grpcs")

#: Accepted ``Authentication`` values, in their documented spelling.
AUTHENTICATION_TYPES = (
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
_CANONICAL_AUTHENTICATION = {name.lower(): name for name in AUTHENTICATION_TYPES}


class ConnectionStringError(DurableTaskError, ValueError):
    """A connection string is malformed, incomplete or names something unsupported.

    Attributes:
        key: The offending key as written (or its documented name when missing), ``None`` when the
            problem is not tied to one key.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True, kw_only=True)
class DurableTaskSchedulerConnectionString:
    """The parsed parts of a scheduler connection string; build one with :meth:`parse`.

    Attributes:
        endpoint: The ``Endpoint`` value, usable as ``host_address``.
        task_hub: The ``TaskHub`` value.
        authentication: The ``Authentication`` value in its documented spelling (e.g. ``"AzureCli"``).
        client_id: ``ClientID``, if given.
        tenant_id: ``TenantId``, if given.
        token_file_path: ``TokenFilePath``, if given.
        additionally_allowed_tenants: ``AdditionallyAllowedTenants`` split on commas.
        resource_id: ``ResourceId`` normalised (no trailing ``/`` or ``/.default``), if given.
        authority_host: ``AuthorityHost``, if given.
    """

    endpoint: str
    task_hub: str
    authentication: str
    client_id: str | None = None
    tenant_id: str | None = None
    token_file_path: str | None = None
    additionally_allowed_tenants: tuple[str, ...] = ()
    resource_id: str | None = None
    authority_host: str | None = None

    @classmethod
    def parse(cls, connection_string: str) -> DurableTaskSchedulerConnectionString:
        """Parse and validate a connection string.

        Args:
            connection_string: ``Key=Value`` segments separated by ``;`` (keys are case-sensitive, as in
                Microsoft's .NET parser): ``Endpoint``, ``TaskHub`` and ``Authentication`` are required.

        Raises:
            ConnectionStringError: malformed segment, unknown key, missing ``Endpoint``/``TaskHub``/
                ``Authentication``, unsupported ``Authentication`` value, or an invalid ``Endpoint``,
                ``ResourceId`` or ``AuthorityHost``; the message and :attr:`ConnectionStringError.key`
                name the culprit.
        """
        values = _split(connection_string)
        for key in _REQUIRED:
            if not values.get(key):
                raise ConnectionStringError(f"connection string is missing the required {key} key", key)
        tenants = values.get("AdditionallyAllowedTenants") or ""
        return cls(
            endpoint=_check_endpoint(values["Endpoint"]),
            task_hub=values["TaskHub"],
            authentication=_check_authentication(values["Authentication"]),
            client_id=values.get("ClientID") or None,
            tenant_id=values.get("TenantId") or None,
            token_file_path=values.get("TokenFilePath") or None,
            additionally_allowed_tenants=tuple(t.strip() for t in tenants.split(",") if t.strip()),
            resource_id=_check_resource_id(values.get("ResourceId")),
            authority_host=_check_authority_host(values.get("AuthorityHost")),
        )

    def create_credential(self) -> TokenCredentialLike | None:
        """A new azure-identity credential for :attr:`authentication`; ``None`` for ``None``.

        The credential is synchronous; the asyncio client runs its token requests in a worker thread.
        """
        if self.authentication == "None":
            return None
        # Imported on demand: azure-identity is slow to import and unused by emulator (None) setups.
        import azure.identity

        credential: TokenCredentialLike = _BUILDERS[self.authentication](azure.identity, self)
        return credential

    def client_arguments(self) -> dict[str, Any]:
        """Keyword arguments for the scheduler client and worker constructors.

        Returns ``host_address``, ``taskhub``, ``resource_id`` and ``token_credential`` (a new
        credential on each call).
        """
        return {
            "host_address": self.endpoint,
            "taskhub": self.task_hub,
            "token_credential": self.create_credential(),
            "resource_id": self.resource_id,
        }


def parse_connection_string(connection_string: str) -> DurableTaskSchedulerConnectionString:
    """Shorthand for :meth:`DurableTaskSchedulerConnectionString.parse`.

    Args:
        connection_string: The scheduler connection string.

    Raises:
        ConnectionStringError: The string is invalid.
    """
    return DurableTaskSchedulerConnectionString.parse(connection_string)


def _split(connection_string: str) -> dict[str, str]:
    if not isinstance(connection_string, str) or not connection_string.strip():
        raise ConnectionStringError("connection string is empty")
    values: dict[str, str] = {}
    for raw in connection_string.split(";"):
        segment = raw.strip()
        if not segment:
            continue
        key, sep, value = segment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConnectionStringError(
                f"malformed connection string segment {segment!r}: expected Key=Value", key or None
            )
        canonical = _CANONICAL_KEY.get(key.lower())
        if canonical is None:
            raise ConnectionStringError(
                f"unknown connection string key {key!r}; expected one of {', '.join(_KEYS)}", key
            )
        values[canonical] = value.strip()
    return values


def _check_endpoint(endpoint: str) -> str:
    if "://" in endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme.lower() not in _ENDPOINT_SCHEMES or not parts.netloc:
            raise ConnectionStringError(
                f"Endpoint {endpoint!r} is not a valid address; use https://host[:port], "
                "http://host:port (emulator) or a bare host[:port]",
                "Endpoint",
            )
    return endpoint


def _check_authentication(value: str) -> str:
    canonical = _CANONICAL_AUTHENTICATION.get(value.lower())
    if canonical is None:
        raise ConnectionStringError(
            f"unsupported Authentication value {value!r}; expected one of {', '.join(AUTHENTICATION_TYPES)}",
            "Authentication",
        )
    return canonical


def _check_resource_id(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return resolve_resource_id(value)
    except ValueError as error:
        raise ConnectionStringError(f"invalid ResourceId {value!r}: {error}", "ResourceId") from None


def _check_authority_host(value: str | None) -> str | None:
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme.lower() != "https" or not parts.netloc:
        raise ConnectionStringError(
            f"AuthorityHost {value!r} must be an absolute https:// URL, e.g. https://login.microsoftonline.us/",
            "AuthorityHost",
        )
    return value


def _options(**candidates: Any) -> dict[str, Any]:
    """Keyword arguments for azure-identity, leaving out unset ones so its own defaults apply."""
    return {name: value for name, value in candidates.items() if value not in (None, (), "")}


def _tenants(cs: DurableTaskSchedulerConnectionString) -> list[str] | None:
    return list(cs.additionally_allowed_tenants) or None


_Builder = Callable[[Any, DurableTaskSchedulerConnectionString], Any]

_BUILDERS: dict[str, _Builder] = {
    "DefaultAzure": lambda identity, cs: identity.DefaultAzureCredential(
        **_options(
            managed_identity_client_id=cs.client_id,
            workload_identity_client_id=cs.client_id,
            workload_identity_tenant_id=cs.tenant_id,
            additionally_allowed_tenants=_tenants(cs),
            authority=cs.authority_host,
        )
    ),
    "ManagedIdentity": lambda identity, cs: identity.ManagedIdentityCredential(**_options(client_id=cs.client_id)),
    "WorkloadIdentity": lambda identity, cs: identity.WorkloadIdentityCredential(
        **_options(
            tenant_id=cs.tenant_id,
            client_id=cs.client_id,
            token_file_path=cs.token_file_path,
            additionally_allowed_tenants=_tenants(cs),
            authority=cs.authority_host,
        )
    ),
    "Environment": lambda identity, cs: identity.EnvironmentCredential(**_options(authority=cs.authority_host)),
    "AzureCli": lambda identity, cs: identity.AzureCliCredential(
        **_options(tenant_id=cs.tenant_id, additionally_allowed_tenants=_tenants(cs))
    ),
    "AzurePowerShell": lambda identity, cs: identity.AzurePowerShellCredential(
        **_options(tenant_id=cs.tenant_id, additionally_allowed_tenants=_tenants(cs))
    ),
    "VisualStudioCode": lambda identity, cs: identity.VisualStudioCodeCredential(
        **_options(tenant_id=cs.tenant_id, additionally_allowed_tenants=_tenants(cs))
    ),
    "InteractiveBrowser": lambda identity, cs: identity.InteractiveBrowserCredential(
        **_options(
            client_id=cs.client_id,
            tenant_id=cs.tenant_id,
            additionally_allowed_tenants=_tenants(cs),
            authority=cs.authority_host,
        )
    ),
}
