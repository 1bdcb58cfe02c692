"""How the dashboard reaches an endpoint: addresses, connection strings, Azure credentials and their tokens."""

from __future__ import annotations

import asyncio
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from dtscale_emulator.dashboard import connection_string
from dtscale_emulator.dashboard.connect import connection_string_clients, endpoint_clients, split_address
from dtscale_emulator.dashboard.credentials import CredentialBearer
from dtscale_emulator.dashboard.endpoint import EndpointClient, EndpointError, StaticBearer
from dtscale_emulator.dashboard.hubs import Hubs
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask.azuremanaged import connection_string as sdk_connection_string
from durabletask.azuremanaged._tokens import token_scope

TOKEN = "scheduler-secret"


@dataclass
class AccessToken:
    token: str
    expires_on: int


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class FakeCredential:
    """An azure-identity credential: each ``get_token`` hands out the next token, valid for ``lifetime`` s."""

    def __init__(self, clock: Callable[[], float], lifetime: float = 3600, **options: Any) -> None:
        self.clock, self.lifetime, self.options = clock, lifetime, options
        self.scopes: list[str] = []
        self.fail: Exception | None = None

    def get_token(self, *scopes: str) -> AccessToken:
        if self.fail is not None:
            raise self.fail
        self.scopes.extend(scopes)
        return AccessToken(f"{TOKEN}-{len(self.scopes)}", int(self.clock() + self.lifetime))


def test_addresses_choose_tls_by_their_scheme() -> None:
    assert split_address("localhost:4001") == ("localhost:4001", False)
    assert split_address("http://127.0.0.1:8080/") == ("127.0.0.1:8080", False)
    assert split_address("grpcs://[::1]:4001") == ("[::1]:4001", True)
    assert split_address("HTTPS://dts.example:443") == ("dts.example:443", True)


def test_a_connection_string_gives_endpoint_hub_and_credential_settings() -> None:
    parsed = connection_string.parse(
        " endpoint = https://my.westus3.durabletask.io ;TASKHUB=orders;authentication=azurecli;"
        "TenantId=t1;AdditionallyAllowedTenants=a, b;;ResourceId=https://custom.example/.default"
    )
    assert (parsed.target, parsed.secure, parsed.task_hub) == ("my.westus3.durabletask.io", True, "orders")
    assert (parsed.authentication, parsed.tenant_id, parsed.allowed_tenants) == ("AzureCli", "t1", ("a", "b"))
    assert parsed.scope == "https://custom.example/.default"
    local = connection_string.parse("Endpoint=http://localhost:8080;Authentication=None;TaskHub=default")
    assert (local.target, local.secure, local.credential()) == ("localhost:8080", False, None)
    assert connection_string.parse("Endpoint=dts.example;Authentication=None;TaskHub=h").secure  # no scheme: TLS


def test_it_accepts_the_keys_and_authentications_the_sdk_documents() -> None:
    assert connection_string.AUTHENTICATIONS == sdk_connection_string.AUTHENTICATION_TYPES
    every_key = ";".join(f"{key}={'https://x.example' if 'Host' in key else 'v'}" for key in connection_string.KEYS)
    text = every_key.replace("Endpoint=v", "Endpoint=https://dts.example")
    text = text.replace("Authentication=v", "Authentication=None")
    sdk = sdk_connection_string.parse_connection_string(text)
    ours = connection_string.parse(text)
    assert (ours.task_hub, ours.client_id, ours.token_file_path) == (sdk.task_hub, sdk.client_id, sdk.token_file_path)
    assert ours.resource_id == sdk.resource_id and ours.authority_host == sdk.authority_host
    assert ours.scope == token_scope(sdk.resource_id)
    assert connection_string.parse("Endpoint=e;TaskHub=h;Authentication=None").scope == token_scope(None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the connection string is empty"),
        ("Endpoint=http://h:1;Authentication=None", "the connection string has no TaskHub"),
        ("Endpoint=http://h:1;TaskHub=x;Authentication=None;Colour=blue", "unknown connection string key 'Colour'"),
        ("Endpoint=http://h:1;TaskHub=x;Authentication", "segment 'Authentication' is not Key=Value"),
        ("Endpoint=http://h:1;TaskHub=x;Authentication=Password", "Authentication 'Password' is not supported"),
        ("Endpoint=ftp://h:1;TaskHub=x;Authentication=None", "Endpoint 'ftp://h:1' is not an address"),
        ("Endpoint=h;TaskHub=x;Authentication=None;AuthorityHost=http://a", "AuthorityHost 'http://a' must be"),
        ("Endpoint=h;TaskHub=x;Authentication=None;ResourceId=/.default", "ResourceId '/.default' is empty"),
    ],
)
def test_a_bad_connection_string_names_the_key(text: str, problem: str) -> None:
    with pytest.raises(connection_string.InvalidConnectionStringError, match=problem):
        connection_string.parse(text)
    with pytest.raises(ValueError, match=problem):  # the command line reports it as bad input
        connection_string_clients(text)


def test_azure_credentials_need_the_azure_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.identity", None)  # as if azure-identity were not installed
    needs = r"Authentication=DefaultAzure needs azure-identity: pip install 'dtscale-emulator\[azure\]'"
    with pytest.raises(ImportError, match=needs):
        connection_string_clients("Endpoint=https://dts.example;TaskHub=x;Authentication=DefaultAzure")


@pytest.mark.parametrize("authentication", [a for a in connection_string.AUTHENTICATIONS if a != "None"])
def test_each_authentication_builds_its_azure_identity_credential(authentication: str) -> None:
    pytest.importorskip("azure.identity")
    text = (
        f"Endpoint=https://dts.example;TaskHub=h;Authentication={authentication};ClientID=app;TenantId=t;"
        "TokenFilePath=/var/run/token;AdditionallyAllowedTenants=*;AuthorityHost=https://login.microsoftonline.us/"
    )
    credential = connection_string.parse(text).credential()  # built only: nothing is asked of Entra
    assert type(credential).__name__ == f"{authentication}Credential"


@pytest.fixture
def fake_identity(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FakeCredential]]:
    """``azure.identity`` replaced by a module whose credentials are :class:`FakeCredential` (no network)."""
    made: list[FakeCredential] = []
    module = types.ModuleType("azure.identity")

    def managed(**options: Any) -> FakeCredential:
        made.append(FakeCredential(time.time, **options))
        return made[-1]

    module.ManagedIdentityCredential = managed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "azure.identity", module)
    yield made


@pytest.fixture(scope="module")
def secured() -> Iterator[EmulatorServer]:
    server = EmulatorServer(port=0, in_memory=True, task_hubs=("default", "other"), auth_token=f"{TOKEN}-1").start()
    try:
        yield server
    finally:
        server.close()


def hub_states(factory: Any, names: tuple[str, ...]) -> list[tuple[str, str | None]]:
    async def check() -> list[tuple[str, str | None]]:
        hubs = Hubs(factory, names)
        try:
            return [(name, (await hubs.get(name)).refused) for name in names]
        finally:
            await hubs.close()

    return aio_loop.run(check())


def test_a_connection_strings_credential_signs_every_hub_with_one_token(
    secured: EmulatorServer, fake_identity: list[FakeCredential]
) -> None:
    text = f"Endpoint=http://{secured.address};TaskHub=default;Authentication=ManagedIdentity;ClientID=app-7"
    factory, hub = connection_string_clients(text)
    assert hub == "default" and fake_identity[0].options == {"client_id": "app-7"}
    assert hub_states(factory, ("default", "other")) == [("default", None), ("other", None)]
    assert fake_identity[0].scopes == ["https://durabletask.io/.default"]  # asked once for both hubs


def test_a_wrong_token_or_a_failing_credential_refuses_the_hub(secured: EmulatorServer) -> None:
    [(_, refused)] = hub_states(endpoint_clients(secured.address, "wrong"), ("default",))
    assert refused is not None and refused.startswith("UNAUTHENTICATED: ")
    credential = FakeCredential(Clock())
    credential.fail = RuntimeError("no managed identity here")
    bearer = CredentialBearer(credential, "scope")
    [(_, refused)] = hub_states(lambda hub: EndpointClient(secured.address, hub, bearer=bearer), ("default",))
    assert refused == "UNAUTHENTICATED: no access token for the scheduler: no managed identity here"


def test_the_service_refusal_keeps_its_status_and_words(secured: EmulatorServer) -> None:
    async def ask() -> None:
        c = EndpointClient(secured.address, "nope", bearer=StaticBearer(f"{TOKEN}-1"))
        try:
            await c.get_instance("x")
        finally:
            await c.close()

    with pytest.raises(EndpointError) as refused:
        aio_loop.run(ask())
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND and refused.value.method == "GetInstance"
    assert str(refused.value).startswith("NOT_FOUND: ") and "nope" in str(refused.value)


def tokens(bearer: CredentialBearer, count: int = 1) -> list[str]:
    async def take() -> list[str]:
        return list(await asyncio.gather(*(bearer.token() for _ in range(count))))

    # On the emulator's loop thread: the browser tests' Playwright keeps this thread's loop marked running.
    return aio_loop.run(take())


def test_a_token_is_renewed_before_it_expires_and_not_sooner() -> None:
    clock = Clock()
    credential = FakeCredential(clock, lifetime=3600)
    bearer = CredentialBearer(credential, "s", margin=300, clock=clock)
    assert tokens(bearer, 3) == [f"{TOKEN}-1"] * 3  # concurrent first calls share one request
    clock.now += 3600 - 301
    assert tokens(bearer) == [f"{TOKEN}-1"]
    clock.now += 2  # within the margin of its expiry
    assert tokens(bearer) == [f"{TOKEN}-2"]
    short = CredentialBearer(FakeCredential(clock, lifetime=100), "s", margin=300, clock=clock)
    assert tokens(short) == [f"{TOKEN}-1"]
    clock.now += 49
    assert tokens(short) == [f"{TOKEN}-1"]
    clock.now += 2  # past half its lifetime: a short-lived token is not renewed on every call
    assert tokens(short) == [f"{TOKEN}-2"]


def test_a_failed_renewal_keeps_the_token_until_it_expires() -> None:
    clock = Clock()
    credential = FakeCredential(clock, lifetime=600)
    bearer = CredentialBearer(credential, "s", margin=300, clock=clock)
    assert tokens(bearer) == [f"{TOKEN}-1"]
    credential.fail = ConnectionError("identity endpoint down")
    clock.now += 400
    assert tokens(bearer) == [f"{TOKEN}-1"]
    clock.now += 200
    with pytest.raises(ConnectionError, match="identity endpoint down"):
        tokens(bearer)


def test_an_async_credential_is_awaited() -> None:
    clock = Clock()

    class AsyncCredential:
        async def get_token(self, *scopes: str) -> AccessToken:
            return AccessToken(f"async-{scopes[0]}", int(clock() + 3600))

    assert tokens(CredentialBearer(AsyncCredential(), "s", clock=clock)) == ["async-s"]
    with pytest.raises(TypeError, match="has no get_token"):
        CredentialBearer(object(), "s")
