"""DurableTaskSchedulerClient and its asyncio twin: headers on real calls, shared refresh, validation."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from durabletask.azuremanaged._metadata import user_agent
from durabletask.azuremanaged.client import (
    AsyncDurableTaskSchedulerClient,
    DurableTaskSchedulerClient,
)
from durabletask.azuremanaged.connection_string import ConnectionStringError
from tests.support.self_signed import localhost_certificate

from ._fakes import (
    FakeAsyncCredential,
    FakeCredential,
    ManualClock,
    RecordingServer,
    start_recording_server,
)


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recorder = start_recording_server()
    yield recorder
    assert recorder.server is not None
    recorder.server.stop(None)


def _headers_of(server: RecordingServer, method: str) -> list[dict[str, str]]:
    return [headers for name, headers in server.calls if name.endswith("/" + method)]


def test_client_calls_carry_every_scheduler_header(server: RecordingServer) -> None:
    credential = FakeCredential(time.time)
    client = DurableTaskSchedulerClient(
        host_address=f"http://127.0.0.1:{server.port}", taskhub="orders", token_credential=credential
    )
    try:
        assert client.get_orchestration_state("a") is None
        assert client.get_orchestration_state("b") is None
    finally:
        client.close()
    first, second = _headers_of(server, "GetInstance")
    assert first["taskhub"] == "orders"
    assert first["x-user-agent"] == user_agent()
    assert first["authorization"] == second["authorization"] == "Bearer token-1"
    assert "workerid" not in first
    assert credential.calls == 1
    assert credential.scopes == [("https://durabletask.io/.default",)]


def test_concurrent_calls_share_one_token_request(server: RecordingServer) -> None:
    gate = threading.Event()
    credential = FakeCredential(time.time, gate=gate)
    client = DurableTaskSchedulerClient(
        host_address=f"http://127.0.0.1:{server.port}", taskhub="hub", token_credential=credential
    )
    threads = [threading.Thread(target=client.get_orchestration_state, args=(f"i{n}",)) for n in range(6)]
    try:
        for thread in threads:
            thread.start()
        assert credential.entered.wait(10)
        gate.set()
        for thread in threads:
            thread.join(10)
    finally:
        client.close()
    tokens = {headers["authorization"] for headers in _headers_of(server, "GetInstance")}
    assert len(_headers_of(server, "GetInstance")) == 6
    assert tokens == {"Bearer token-1"}
    assert credential.calls == 1


def test_client_from_connection_string(server: RecordingServer) -> None:
    client = DurableTaskSchedulerClient.from_connection_string(
        f"Endpoint=http://127.0.0.1:{server.port};TaskHub=from-string;Authentication=None"
    )
    try:
        client.get_orchestration_state("x")
    finally:
        client.close()
    (headers,) = _headers_of(server, "GetInstance")
    assert headers["taskhub"] == "from-string"
    assert "authorization" not in headers


def test_client_validation() -> None:
    with pytest.raises(ValueError, match="taskhub"):
        DurableTaskSchedulerClient(host_address="h", taskhub="", token_credential=None)
    with pytest.raises(ValueError, match="resource_id"):
        DurableTaskSchedulerClient(host_address="h", taskhub="t", token_credential=None, resource_id=" / ")
    with pytest.raises(ConnectionStringError, match="Authentication"):
        DurableTaskSchedulerClient.from_connection_string("Endpoint=h;TaskHub=t;Authentication=Password")


def test_token_is_not_requested_at_construction() -> None:
    credential = FakeCredential(ManualClock())
    DurableTaskSchedulerClient(host_address="h", taskhub="t", token_credential=credential).close()
    assert credential.calls == 0


async def test_async_client_calls_carry_every_scheduler_header(server: RecordingServer) -> None:
    credential = FakeAsyncCredential(time.time)
    client = AsyncDurableTaskSchedulerClient(
        host_address=f"http://127.0.0.1:{server.port}",
        taskhub="orders",
        token_credential=credential,
        resource_id="https://custom.example",
    )
    try:
        assert await client.get_orchestration_state("a") is None
    finally:
        await client.close()
    (headers,) = _headers_of(server, "GetInstance")
    assert headers["taskhub"] == "orders"
    assert headers["x-user-agent"] == user_agent()
    assert headers["authorization"] == "Bearer token-1"
    assert credential.scopes == [("https://custom.example/.default",)]


async def test_async_concurrent_calls_share_one_token_request(server: RecordingServer) -> None:
    credential = FakeAsyncCredential(time.time)
    credential.release = asyncio.Event()
    client = AsyncDurableTaskSchedulerClient(
        host_address=f"http://127.0.0.1:{server.port}", taskhub="hub", token_credential=credential
    )
    try:
        calls = [asyncio.ensure_future(client.get_orchestration_state(f"i{n}")) for n in range(6)]
        await asyncio.wait_for(credential.entered.wait(), 10)
        credential.release.set()
        await asyncio.gather(*calls)
    finally:
        await client.close()
    assert {headers["authorization"] for headers in _headers_of(server, "GetInstance")} == {"Bearer token-1"}
    assert credential.calls == 1


async def test_async_client_accepts_a_blocking_credential(server: RecordingServer) -> None:
    credential = FakeCredential(time.time)
    client = AsyncDurableTaskSchedulerClient(
        host_address=f"http://127.0.0.1:{server.port}",
        taskhub="hub",
        token_credential=credential,  # type: ignore[arg-type]
    )
    try:
        await client.get_orchestration_state("x")
    finally:
        await client.close()
    assert _headers_of(server, "GetInstance")[0]["authorization"] == "Bearer token-1"


async def test_async_client_from_connection_string(server: RecordingServer) -> None:
    client = AsyncDurableTaskSchedulerClient.from_connection_string(
        f"endpoint=http://127.0.0.1:{server.port};taskhub=async-hub;authentication=none"
    )
    try:
        await client.get_orchestration_state("x")
    finally:
        await client.close()
    (headers,) = _headers_of(server, "GetInstance")
    assert headers["taskhub"] == "async-hub"
    assert "authorization" not in headers


@pytest.fixture
def tls_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingServer]:
    """A TLS recording server whose self-signed certificate the SDK's TLS channels trust."""
    certificate, key = localhost_certificate()
    recorder = start_recording_server(grpc.ssl_server_credentials([(key, certificate)]))
    real_credentials = grpc.ssl_channel_credentials
    monkeypatch.setattr(
        grpc, "ssl_channel_credentials", lambda *args, **kwargs: real_credentials(root_certificates=certificate)
    )
    yield recorder
    assert recorder.server is not None
    recorder.server.stop(None)


@pytest.mark.parametrize("address", ["localhost:{port}", "https://localhost:{port}"])
def test_client_uses_tls_for_bare_hosts_and_https(tls_server: RecordingServer, address: str) -> None:
    client = DurableTaskSchedulerClient(
        host_address=address.format(port=tls_server.port),
        taskhub="tls",
        token_credential=FakeCredential(time.time),
    )
    try:
        client.get_orchestration_state("x")
    finally:
        client.close()
    assert _headers_of(tls_server, "GetInstance")[0]["authorization"] == "Bearer token-1"


async def test_async_client_uses_tls_for_bare_hosts(tls_server: RecordingServer) -> None:
    client = AsyncDurableTaskSchedulerClient(
        host_address=f"localhost:{tls_server.port}", taskhub="tls", token_credential=FakeAsyncCredential(time.time)
    )
    try:
        await client.get_orchestration_state("x")
    finally:
        await client.close()
    assert _headers_of(tls_server, "GetInstance")[0]["taskhub"] == "tls"


def test_caller_channel_still_gets_the_headers_once(server: RecordingServer) -> None:
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    client = DurableTaskSchedulerClient(
        host_address="ignored:1", taskhub="given", token_credential=FakeCredential(time.time), channel=channel
    )
    try:
        client.get_orchestration_state("x")
    finally:
        client.close()
        channel.close()
    (name, headers), *_ = server.calls
    assert name.endswith("/GetInstance")
    assert headers["taskhub"] == "given"
    assert headers["authorization"] == "Bearer token-1"
    assert "," not in headers["x-user-agent"]  # the recorder joins a repeated header with ", "
