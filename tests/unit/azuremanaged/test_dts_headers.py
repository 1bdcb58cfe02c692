"""Scheduler headers on real gRPC calls through the sync and asyncio interceptors."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf import empty_pb2

from durabletask import DISTRIBUTION_NAME, __version__
from durabletask._grpc.channel import create_aio_channel, create_channel
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.azuremanaged._metadata import (
    AsyncSchedulerInterceptor,
    SchedulerInterceptor,
    default_channel_options,
    new_worker_id,
    scheduler_headers,
    user_agent,
)
from durabletask.azuremanaged._tokens import AsyncTokenCache, TokenCache
from tests.support.self_signed import localhost_certificate

from ._fakes import FakeAsyncCredential, FakeCredential, ManualClock, RecordingServer, start_recording_server

SCOPE = "https://durabletask.io/.default"


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recorder = start_recording_server()
    yield recorder
    assert recorder.server is not None
    recorder.server.stop(None)


def test_user_agent_names_this_distribution() -> None:
    assert user_agent() == f"{DISTRIBUTION_NAME}/{__version__}"
    assert user_agent().startswith("dtscale/")


def test_worker_id_is_host_pid_and_a_fresh_uuid() -> None:
    first, second = new_worker_id(), new_worker_id()
    host, pid, unique = first.rsplit(":", 2)
    assert host == socket.gethostname()
    assert pid == str(os.getpid())
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", unique)
    assert first != second


def test_empty_taskhub_is_rejected() -> None:
    with pytest.raises(ValueError, match="taskhub"):
        scheduler_headers("")


def test_default_channel_options_set_keepalive_and_message_sizes() -> None:
    options = dict(default_channel_options().to_grpc_options())
    assert options["grpc.keepalive_time_ms"] == 30_000
    assert options["grpc.keepalive_timeout_ms"] == 10_000
    assert options["grpc.max_receive_message_length"] > 4 * 1024 * 1024
    assert options["grpc.max_send_message_length"] > 4 * 1024 * 1024


def test_sync_calls_carry_taskhub_user_agent_and_refreshed_bearer(server: RecordingServer) -> None:
    clock = ManualClock()
    credential = FakeCredential(clock, lifetime=3600)
    interceptor = SchedulerInterceptor("orders", token_cache=TokenCache(credential, SCOPE, clock=clock))
    channel = create_channel(f"http://127.0.0.1:{server.port}", interceptors=[interceptor])
    try:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.Hello(empty_pb2.Empty(), timeout=10)
        clock.advance(3400)  # inside the refresh margin
        stub.GetInstance(pb.GetInstanceRequest(instanceId="x"), timeout=10)
    finally:
        channel.close()
    (_, hello), (_, get_instance) = server.calls
    assert hello["taskhub"] == "orders"
    assert hello["x-user-agent"] == user_agent()
    assert hello["authorization"] == "Bearer token-1"
    assert "workerid" not in hello
    assert get_instance["authorization"] == "Bearer token-2"
    assert credential.calls == 2


def test_without_credential_no_authorization_is_sent(server: RecordingServer) -> None:
    channel = create_channel(f"127.0.0.1:{server.port}", interceptors=[SchedulerInterceptor("default")])
    try:
        pb_grpc.TaskHubSidecarServiceStub(channel).GetInstance(pb.GetInstanceRequest(instanceId="x"), timeout=10)
    finally:
        channel.close()
    headers = server.wait_for("GetInstance")
    assert headers["taskhub"] == "default"
    assert "authorization" not in headers


def test_streaming_calls_carry_worker_id(server: RecordingServer) -> None:
    worker_id = new_worker_id()
    interceptor = SchedulerInterceptor("hub", worker_id=worker_id)
    channel = create_channel(f"127.0.0.1:{server.port}", interceptors=[interceptor])
    try:
        stream = pb_grpc.TaskHubSidecarServiceStub(channel).GetWorkItems(pb.GetWorkItemsRequest(), timeout=10)
        assert list(stream) == []
    finally:
        channel.close()
    headers = server.wait_for("GetWorkItems")
    assert headers["workerid"] == worker_id
    assert headers["taskhub"] == "hub"


def test_caller_metadata_is_kept(server: RecordingServer) -> None:
    channel = create_channel(
        f"127.0.0.1:{server.port}", metadata=[("x-custom", "1")], interceptors=[SchedulerInterceptor("hub")]
    )
    try:
        pb_grpc.TaskHubSidecarServiceStub(channel).GetInstance(
            pb.GetInstanceRequest(instanceId="x"), metadata=[("x-call", "2")], timeout=10
        )
    finally:
        channel.close()
    headers = server.wait_for("GetInstance")
    assert (headers["x-custom"], headers["x-call"], headers["taskhub"]) == ("1", "2", "hub")


async def test_async_calls_carry_every_header(server: RecordingServer) -> None:
    clock = ManualClock()
    credential = FakeAsyncCredential(clock, lifetime=3600)
    interceptor = AsyncSchedulerInterceptor(
        "orders", token_cache=AsyncTokenCache(credential, SCOPE, clock=clock), worker_id="w-1"
    )
    channel = create_aio_channel(f"http://127.0.0.1:{server.port}", interceptors=[interceptor])
    try:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        await stub.GetInstance(pb.GetInstanceRequest(instanceId="x"), timeout=10)
        await stub.GetInstance(pb.GetInstanceRequest(instanceId="y"), timeout=10)
        clock.advance(3600)
        await stub.GetInstance(pb.GetInstanceRequest(instanceId="z"), timeout=10)
    finally:
        await channel.close()
    tokens = [headers["authorization"] for _, headers in server.calls]
    assert tokens == ["Bearer token-1", "Bearer token-1", "Bearer token-2"]
    first = server.calls[0][1]
    assert (first["taskhub"], first["x-user-agent"], first["workerid"]) == ("orders", user_agent(), "w-1")


def test_headers_travel_over_tls() -> None:
    certificate, key = localhost_certificate()
    tls_server = start_recording_server(grpc.ssl_server_credentials([(key, certificate)]))
    channel = create_channel(
        f"https://localhost:{tls_server.port}",
        interceptors=[SchedulerInterceptor("secure-hub")],
        root_certificates=certificate,
    )
    try:
        pb_grpc.TaskHubSidecarServiceStub(channel).GetInstance(pb.GetInstanceRequest(instanceId="x"), timeout=10)
    finally:
        channel.close()
        assert tls_server.server is not None
        tls_server.server.stop(None)
    assert tls_server.wait_for("GetInstance")["taskhub"] == "secure-hub"


async def test_async_streaming_calls_carry_headers(server: RecordingServer) -> None:
    clock = ManualClock()
    cache = AsyncTokenCache(FakeAsyncCredential(clock), SCOPE, clock=clock)
    interceptor = AsyncSchedulerInterceptor("stream-hub", token_cache=cache, worker_id="w-2")
    channel = create_aio_channel(f"127.0.0.1:{server.port}", interceptors=[interceptor])
    try:
        stream = pb_grpc.TaskHubSidecarServiceStub(channel).GetWorkItems(pb.GetWorkItemsRequest(), timeout=10)
        assert [item async for item in stream] == []
    finally:
        await channel.close()
    headers = server.wait_for("GetWorkItems")
    assert (headers["taskhub"], headers["workerid"], headers["authorization"]) == (
        "stream-hub",
        "w-2",
        "Bearer token-1",
    )
