"""The compatible API's ``azuremanaged.internal`` names keep working on top of our token caches."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from durabletask._grpc.channel import create_aio_channel, create_channel
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.azuremanaged.internal.access_token_manager import (
    AccessTokenManager,
    AsyncAccessTokenManager,
    resolve_resource_id,
)
from durabletask.azuremanaged.internal.durabletask_grpc_interceptor import (
    DTSAsyncDefaultClientInterceptorImpl,
    DTSDefaultClientInterceptorImpl,
)

from ._fakes import FakeAsyncCredential, FakeCredential, RecordingServer, start_recording_server


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recorder = start_recording_server()
    yield recorder
    assert recorder.server is not None
    recorder.server.stop(None)


def test_access_token_manager_lifecycle() -> None:
    credential = FakeCredential(time.time, lifetime=3600)
    manager = AccessTokenManager(credential, resource_id="https://aud.example/")
    assert manager.expiry_time is None
    assert manager.is_token_expired()
    token = manager.get_access_token()
    assert token is not None and token.token == "token-1"
    assert credential.scopes == [("https://aud.example/.default",)]
    assert manager.expiry_time is not None
    assert manager.expiry_time.timestamp() == token.expires_on
    assert not manager.is_token_expired()
    manager.refresh_token()
    assert credential.calls == 2


def test_manager_without_credential_has_no_token() -> None:
    manager = AccessTokenManager(None)
    assert manager.get_access_token() is None
    assert manager.expiry_time is None
    assert resolve_resource_id(None).startswith("https://")


async def test_async_access_token_manager() -> None:
    credential = FakeAsyncCredential(time.time)
    manager = AsyncAccessTokenManager(credential)
    token = await manager.get_access_token()
    assert token is not None and token.token == "token-1"
    await manager.refresh_token()
    assert credential.calls == 2
    assert await AsyncAccessTokenManager(None).get_access_token() is None


def test_legacy_sync_interceptor_adds_headers(server: RecordingServer) -> None:
    interceptor = DTSDefaultClientInterceptorImpl(FakeCredential(time.time), "hub", "worker-7")
    channel = create_channel(f"127.0.0.1:{server.port}", interceptors=[interceptor])
    try:
        pb_grpc.TaskHubSidecarServiceStub(channel).GetInstance(pb.GetInstanceRequest(instanceId="x"), timeout=10)
    finally:
        channel.close()
    headers = server.wait_for("GetInstance")
    assert (headers["taskhub"], headers["workerid"], headers["authorization"]) == (
        "hub",
        "worker-7",
        "Bearer token-1",
    )


async def test_legacy_async_interceptor_adds_headers(server: RecordingServer) -> None:
    interceptor = DTSAsyncDefaultClientInterceptorImpl(FakeAsyncCredential(time.time), "hub")
    channel = create_aio_channel(f"127.0.0.1:{server.port}", interceptors=[interceptor])
    try:
        await pb_grpc.TaskHubSidecarServiceStub(channel).GetInstance(pb.GetInstanceRequest(instanceId="x"), timeout=10)
    finally:
        await channel.close()
    headers = server.wait_for("GetInstance")
    assert (headers["taskhub"], headers["authorization"]) == ("hub", "Bearer token-1")
