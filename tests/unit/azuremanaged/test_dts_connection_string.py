"""Connection-string parsing: every key, every authentication type, every error."""

from __future__ import annotations

from typing import Any

import azure.identity
import pytest

from durabletask._errors import DurableTaskError
from durabletask.azuremanaged.connection_string import (
    AUTHENTICATION_TYPES,
    ConnectionStringError,
    DurableTaskSchedulerConnectionString,
    parse_connection_string,
)

BASE = "Endpoint=https://myscheduler.westus3.durabletask.io;TaskHub=orders"


def test_minimal_string() -> None:
    cs = parse_connection_string(BASE + ";Authentication=DefaultAzure")
    assert cs == DurableTaskSchedulerConnectionString(
        endpoint="https://myscheduler.westus3.durabletask.io", task_hub="orders", authentication="DefaultAzure"
    )


def test_every_key_is_read() -> None:
    cs = parse_connection_string(
        "Endpoint=https://s.durabletask.io;TaskHub=hub;Authentication=WorkloadIdentity;ClientID=cid;"
        "TenantId=tid;TokenFilePath=/var/run/token;AdditionallyAllowedTenants=t1, t2,,t3;"
        "ResourceId=https://aud.example/.default;AuthorityHost=https://login.microsoftonline.us/"
    )
    assert cs.endpoint == "https://s.durabletask.io"
    assert cs.task_hub == "hub"
    assert cs.authentication == "WorkloadIdentity"
    assert cs.client_id == "cid"
    assert cs.tenant_id == "tid"
    assert cs.token_file_path == "/var/run/token"
    assert cs.additionally_allowed_tenants == ("t1", "t2", "t3")
    assert cs.resource_id == "https://aud.example"
    assert cs.authority_host == "https://login.microsoftonline.us/"


def test_keys_and_authentication_are_case_insensitive_and_whitespace_is_trimmed() -> None:
    cs = parse_connection_string(
        " endpoint = http://localhost:8080 ; TASKHUB=default;authentication= managedIDENTITY ;clientid=abc;"
        "TENANTID=t;tokenfilepath=/f;resourceid=https://r;authorityhost=https://a.example/"
    )
    assert (cs.endpoint, cs.task_hub, cs.authentication) == ("http://localhost:8080", "default", "ManagedIdentity")
    assert (cs.client_id, cs.tenant_id, cs.token_file_path) == ("abc", "t", "/f")
    assert (cs.resource_id, cs.authority_host) == ("https://r", "https://a.example/")


def test_empty_segments_are_skipped_and_the_last_repeat_wins() -> None:
    cs = parse_connection_string(";;" + BASE + ";;Authentication=None;TaskHub=second;")
    assert cs.task_hub == "second"
    assert cs.authentication == "None"


def test_only_the_first_equals_splits() -> None:
    cs = parse_connection_string(BASE + ";Authentication=None;ClientID=a=b==")
    assert cs.client_id == "a=b=="


def test_blank_optional_values_mean_unset() -> None:
    cs = parse_connection_string(BASE + ";Authentication=None;ClientID=;ResourceId=  ;AuthorityHost=")
    assert cs.client_id is None
    assert cs.resource_id is None
    assert cs.authority_host is None


@pytest.mark.parametrize("endpoint", ["myscheduler.durabletask.io", "localhost:8080", "grpcs://h:443", "http://h"])
def test_endpoint_forms_accepted(endpoint: str) -> None:
    cs = parse_connection_string(f"Endpoint={endpoint};TaskHub=h;Authentication=None")
    assert cs.endpoint == endpoint


@pytest.mark.parametrize("spelling", [*AUTHENTICATION_TYPES, "defaultazure", "AZURECLI", "none"])
def test_every_authentication_value_is_canonicalised(spelling: str) -> None:
    cs = parse_connection_string(f"{BASE};Authentication={spelling}")
    assert cs.authentication in AUTHENTICATION_TYPES
    assert cs.authentication.lower() == spelling.lower()


# --- errors -----------------------------------------------------------------------------------------


def _error(text: str) -> ConnectionStringError:
    with pytest.raises(ConnectionStringError) as caught:
        parse_connection_string(text)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, DurableTaskError)
    return caught.value


@pytest.mark.parametrize("text", ["", "   ", ";;"])
def test_empty_string(text: str) -> None:
    error = _error(text)
    assert "empty" in str(error) or "missing" in str(error)


def test_unknown_key_is_named() -> None:
    error = _error(BASE + ";Authentication=None;SharedKey=abc")
    assert error.key == "SharedKey"
    assert "unknown connection string key 'SharedKey'" in str(error)
    assert "Endpoint" in str(error)


@pytest.mark.parametrize("missing", ["Endpoint", "TaskHub", "Authentication"])
def test_missing_required_key_is_named(missing: str) -> None:
    parts = {"Endpoint": "https://h", "TaskHub": "hub", "Authentication": "None"}
    text = ";".join(f"{key}={value}" for key, value in parts.items() if key != missing)
    error = _error(text)
    assert error.key == missing
    assert f"missing the required {missing} key" in str(error)


def test_blank_required_value_counts_as_missing() -> None:
    error = _error("Endpoint= ;TaskHub=h;Authentication=None")
    assert error.key == "Endpoint"


def test_unsupported_authentication_is_named() -> None:
    error = _error(BASE + ";Authentication=VisualStudio")
    assert error.key == "Authentication"
    assert "unsupported Authentication value 'VisualStudio'" in str(error)
    assert "DefaultAzure" in str(error)


@pytest.mark.parametrize(("segment", "key"), [("JustText", "JustText"), ("=value", None)])
def test_malformed_segment_is_named(segment: str, key: str | None) -> None:
    error = _error(f"{BASE};Authentication=None;{segment}")
    assert error.key == key
    assert f"malformed connection string segment {segment!r}" in str(error)


@pytest.mark.parametrize("endpoint", ["ftp://host", "https://", "https:///path"])
def test_invalid_endpoint_is_named(endpoint: str) -> None:
    error = _error(f"Endpoint={endpoint};TaskHub=h;Authentication=None")
    assert error.key == "Endpoint"
    assert endpoint in str(error)


def test_resource_id_empty_after_normalisation_is_named() -> None:
    error = _error(BASE + ";Authentication=None;ResourceId=/.default")
    assert error.key == "ResourceId"
    assert "invalid ResourceId" in str(error)


@pytest.mark.parametrize("authority", ["http://login.example", "login.microsoftonline.us"])
def test_authority_host_must_be_https(authority: str) -> None:
    error = _error(f"{BASE};Authentication=DefaultAzure;AuthorityHost={authority}")
    assert error.key == "AuthorityHost"


# --- credentials ------------------------------------------------------------------------------------


class _Recorder:
    """Stands in for an azure-identity credential class and remembers how it was built."""

    built: list[tuple[str, dict[str, Any]]]

    def __init__(self, name: str, built: list[tuple[str, dict[str, Any]]]) -> None:
        self.name = name
        self.built = built

    def __call__(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        self.built.append((self.name, kwargs))
        return (self.name, kwargs)


CREDENTIAL_CLASSES = {
    "DefaultAzure": "DefaultAzureCredential",
    "ManagedIdentity": "ManagedIdentityCredential",
    "WorkloadIdentity": "WorkloadIdentityCredential",
    "Environment": "EnvironmentCredential",
    "AzureCli": "AzureCliCredential",
    "AzurePowerShell": "AzurePowerShellCredential",
    "VisualStudioCode": "VisualStudioCodeCredential",
    "InteractiveBrowser": "InteractiveBrowserCredential",
}

FULL = (
    "ClientID=cid;TenantId=tid;TokenFilePath=/tok;AdditionallyAllowedTenants=x,y;"
    "AuthorityHost=https://login.microsoftonline.us/"
)
EXPECTED_KWARGS: dict[str, dict[str, Any]] = {
    "DefaultAzure": {
        "managed_identity_client_id": "cid",
        "workload_identity_client_id": "cid",
        "workload_identity_tenant_id": "tid",
        "additionally_allowed_tenants": ["x", "y"],
        "authority": "https://login.microsoftonline.us/",
    },
    "ManagedIdentity": {"client_id": "cid"},
    "WorkloadIdentity": {
        "tenant_id": "tid",
        "client_id": "cid",
        "token_file_path": "/tok",
        "additionally_allowed_tenants": ["x", "y"],
        "authority": "https://login.microsoftonline.us/",
    },
    "Environment": {"authority": "https://login.microsoftonline.us/"},
    "AzureCli": {"tenant_id": "tid", "additionally_allowed_tenants": ["x", "y"]},
    "AzurePowerShell": {"tenant_id": "tid", "additionally_allowed_tenants": ["x", "y"]},
    "VisualStudioCode": {"tenant_id": "tid", "additionally_allowed_tenants": ["x", "y"]},
    "InteractiveBrowser": {
        "client_id": "cid",
        "tenant_id": "tid",
        "additionally_allowed_tenants": ["x", "y"],
        "authority": "https://login.microsoftonline.us/",
    },
}


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    record: list[tuple[str, dict[str, Any]]] = []
    for class_name in CREDENTIAL_CLASSES.values():
        monkeypatch.setattr(azure.identity, class_name, _Recorder(class_name, record))
    return record


@pytest.mark.parametrize("authentication", sorted(CREDENTIAL_CLASSES))
def test_each_authentication_builds_its_credential_with_the_given_settings(
    built: list[tuple[str, dict[str, Any]]], authentication: str
) -> None:
    parse_connection_string(f"{BASE};Authentication={authentication};{FULL}").create_credential()
    assert built == [(CREDENTIAL_CLASSES[authentication], EXPECTED_KWARGS[authentication])]


@pytest.mark.parametrize("authentication", sorted(CREDENTIAL_CLASSES))
def test_unset_settings_are_left_to_azure_identity_defaults(
    built: list[tuple[str, dict[str, Any]]], authentication: str
) -> None:
    parse_connection_string(f"{BASE};Authentication={authentication}").create_credential()
    assert built == [(CREDENTIAL_CLASSES[authentication], {})]


def test_none_authentication_builds_no_credential(built: list[tuple[str, dict[str, Any]]]) -> None:
    assert parse_connection_string(f"{BASE};Authentication=None").create_credential() is None
    assert built == []


@pytest.mark.parametrize("authentication", sorted(CREDENTIAL_CLASSES))
def test_real_azure_identity_accepts_the_settings(authentication: str) -> None:
    credential = parse_connection_string(f"{BASE};Authentication={authentication};{FULL}").create_credential()
    try:
        assert type(credential).__name__ == CREDENTIAL_CLASSES[authentication]
        assert callable(getattr(credential, "get_token", None))
    finally:
        close = getattr(credential, "close", None)
        if close is not None:
            close()


def test_client_arguments_feed_the_constructors(built: list[tuple[str, dict[str, Any]]]) -> None:
    cs = parse_connection_string(f"{BASE};Authentication=ManagedIdentity;ClientID=mi;ResourceId=https://aud/")
    arguments = cs.client_arguments()
    assert arguments == {
        "host_address": "https://myscheduler.westus3.durabletask.io",
        "taskhub": "orders",
        "token_credential": ("ManagedIdentityCredential", {"client_id": "mi"}),
        "resource_id": "https://aud",
    }
