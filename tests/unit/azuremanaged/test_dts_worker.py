"""DurableTaskSchedulerWorker: headers on its real calls, TLS decision, channel defaults, validation."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from durabletask.azuremanaged._metadata import user_agent
from durabletask.azuremanaged.connection_string import ConnectionStringError
from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker
from durabletask.grpc_options import GrpcChannelOptions
from tests.support.self_signed import localhost_certificate

from ._fakes import FakeAsyncCredential, FakeCredential, ManualClock, RecordingServer, start_recording_server


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recorder = start_recording_server()
    yield recorder
    assert recorder.server is not None
    recorder.server.stop(None)


def _first_stream_headers(worker: DurableTaskSchedulerWorker, server: RecordingServer) -> dict[str, str]:
    worker.start()
    try:
        return server.wait_for("GetWorkItems")
    finally:
        worker.stop()


def test_worker_calls_carry_every_scheduler_header(server: RecordingServer) -> None:
    credential = FakeCredential(time.time)
    worker = DurableTaskSchedulerWorker(
        host_address=f"http://127.0.0.1:{server.port}", taskhub="orders", token_credential=credential
    )
    headers = _first_stream_headers(worker, server)
    assert headers["taskhub"] == "orders"
    assert headers["x-user-agent"] == user_agent()
    assert headers["workerid"] == worker.worker_id
    assert headers["authorization"] == "Bearer token-1"
    assert credential.scopes[0] == ("https://durabletask.io/.default",)
    # Every call the worker made (handshake included) carried the same identity.
    assert {h["workerid"] for _, h in server.calls} == {worker.worker_id}


def test_a_channel_passed_in_still_gets_the_task_hub_and_token(server: RecordingServer) -> None:
    # Microsoft's worker drops its interceptors when given a channel, and so serves the 'default' hub.
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    credential = FakeCredential(time.time)
    worker = DurableTaskSchedulerWorker(
        host_address="ignored:1", taskhub="orders", token_credential=credential, channel=channel
    )
    try:
        headers = _first_stream_headers(worker, server)
    finally:
        channel.close()
    assert (headers["taskhub"], headers["authorization"]) == ("orders", "Bearer token-1")
    assert {(h["taskhub"], h["workerid"]) for _, h in server.calls} == {("orders", worker.worker_id)}


def test_a_plain_worker_applies_metadata_and_interceptors_to_a_channel_passed_in(server: RecordingServer) -> None:
    from durabletask.worker import TaskHubGrpcWorker

    class Tagging(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
        def _add(self, continuation: Any, details: Any, request: Any) -> Any:
            extra = [*(details.metadata or ()), ("x-probe", "yes")]
            return continuation(details._replace(metadata=extra), request)

        intercept_unary_unary = intercept_unary_stream = _add

    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    worker = TaskHubGrpcWorker(channel=channel, metadata=[("taskhub", "named")], interceptors=[Tagging()])
    worker.start()
    try:
        headers = server.wait_for("GetWorkItems")
    finally:
        worker.stop()
        channel.close()
    assert (headers["taskhub"], headers["x-probe"]) == ("named", "yes")


def test_worker_ids_differ_between_workers() -> None:
    first = DurableTaskSchedulerWorker(host_address="h", taskhub="t", token_credential=None)
    second = DurableTaskSchedulerWorker(host_address="h", taskhub="t", token_credential=None)
    assert first.worker_id != second.worker_id


def test_resource_id_changes_the_requested_scope(server: RecordingServer) -> None:
    credential = FakeCredential(time.time)
    worker = DurableTaskSchedulerWorker(
        host_address=f"http://127.0.0.1:{server.port}",
        taskhub="hub",
        token_credential=credential,
        resource_id="https://custom.example/.default",
    )
    _first_stream_headers(worker, server)
    assert credential.scopes[0] == ("https://custom.example/.default",)


def test_token_is_not_requested_at_construction() -> None:
    credential = FakeCredential(ManualClock())
    DurableTaskSchedulerWorker(host_address="h", taskhub="t", token_credential=credential)
    assert credential.calls == 0


def test_from_connection_string_without_authentication(server: RecordingServer) -> None:
    worker = DurableTaskSchedulerWorker.from_connection_string(
        f"Endpoint=http://127.0.0.1:{server.port};TaskHub=from-string;Authentication=None"
    )
    headers = _first_stream_headers(worker, server)
    assert headers["taskhub"] == "from-string"
    assert "authorization" not in headers


def test_from_connection_string_rejects_bad_strings() -> None:
    with pytest.raises(ConnectionStringError, match="TaskHub"):
        DurableTaskSchedulerWorker.from_connection_string("Endpoint=http://h:1;Authentication=None")


@pytest.mark.parametrize("taskhub", ["", "  "])
def test_empty_taskhub_is_rejected(taskhub: str) -> None:
    with pytest.raises(ValueError, match="taskhub"):
        DurableTaskSchedulerWorker(host_address="h", taskhub=taskhub, token_credential=None)


def test_bad_resource_id_is_rejected_even_without_credential() -> None:
    with pytest.raises(ValueError, match="resource_id"):
        DurableTaskSchedulerWorker(host_address="h", taskhub="t", token_credential=None, resource_id="/.default")


def test_async_credential_is_rejected_with_guidance() -> None:
    with pytest.raises(TypeError, match=r"azure\.identity\.aio"):
        DurableTaskSchedulerWorker(
            host_address="h",
            taskhub="t",
            token_credential=FakeAsyncCredential(ManualClock()),  # type: ignore[arg-type]
        )


# --- transport --------------------------------------------------------------------------------------


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    """Records every channel gRPC opens: ``(kind, target, options)``, still opening it for real."""
    record: list[tuple[str, str, dict[str, Any]]] = []
    real_insecure, real_secure = grpc.insecure_channel, grpc.secure_channel

    def insecure(target: str, options: Any = None, **kwargs: Any) -> grpc.Channel:
        record.append(("plaintext", target, dict(options or ())))
        return real_insecure(target, options=options, **kwargs)

    def secure(target: str, credentials: grpc.ChannelCredentials, options: Any = None, **kwargs: Any) -> Any:
        record.append(("tls", target, dict(options or ())))
        return real_secure(target, credentials, options=options, **kwargs)

    monkeypatch.setattr(grpc, "insecure_channel", insecure)
    monkeypatch.setattr(grpc, "secure_channel", secure)
    return record


def test_bare_host_uses_tls_by_default(
    monkeypatch: pytest.MonkeyPatch, opened: list[tuple[str, str, dict[str, Any]]]
) -> None:
    certificate, key = localhost_certificate()
    tls_server = start_recording_server(grpc.ssl_server_credentials([(key, certificate)]))
    real_credentials = grpc.ssl_channel_credentials
    # Trust the test certificate wherever the SDK asks gRPC for TLS credentials.
    monkeypatch.setattr(
        grpc, "ssl_channel_credentials", lambda *args, **kwargs: real_credentials(root_certificates=certificate)
    )
    try:
        worker = DurableTaskSchedulerWorker(
            host_address=f"localhost:{tls_server.port}", taskhub="tls-hub", token_credential=None
        )
        headers = _first_stream_headers(worker, tls_server)
    finally:
        assert tls_server.server is not None
        tls_server.server.stop(None)
    assert headers["taskhub"] == "tls-hub"
    assert opened[0][:2] == ("tls", f"localhost:{tls_server.port}")


@pytest.mark.parametrize(
    ("address", "secure_channel"), [("http://127.0.0.1:{port}", True), ("127.0.0.1:{port}", False)]
)
def test_http_scheme_or_secure_channel_false_uses_plaintext(
    server: RecordingServer,
    opened: list[tuple[str, str, dict[str, Any]]],
    address: str,
    secure_channel: bool,
) -> None:
    worker = DurableTaskSchedulerWorker(
        host_address=address.format(port=server.port),
        taskhub="plain",
        token_credential=None,
        secure_channel=secure_channel,
    )
    _first_stream_headers(worker, server)
    assert opened[0][:2] == ("plaintext", f"127.0.0.1:{server.port}")


def test_default_channel_options_apply_unless_overridden(
    server: RecordingServer, opened: list[tuple[str, str, dict[str, Any]]]
) -> None:
    address = f"http://127.0.0.1:{server.port}"
    _first_stream_headers(DurableTaskSchedulerWorker(host_address=address, taskhub="a", token_credential=None), server)
    defaults = opened[-1][2]
    assert defaults["grpc.keepalive_time_ms"] == 30_000
    assert defaults["grpc.max_receive_message_length"] == 16 * 1024 * 1024

    server.reset()
    custom = GrpcChannelOptions(max_receive_message_length=1234)
    worker = DurableTaskSchedulerWorker(
        host_address=address, taskhub="b", token_credential=None, channel_options=custom
    )
    _first_stream_headers(worker, server)
    assert opened[-1][2]["grpc.max_receive_message_length"] == 1234
    assert "grpc.keepalive_time_ms" not in opened[-1][2]


async def test_async_clients_refuse_a_channel_they_cannot_add_headers_to() -> None:
    # A grpc.aio channel cannot be wrapped; Microsoft's async clients drop the headers silently instead.
    from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient
    from durabletask.client import AsyncTaskHubGrpcClient

    channel = grpc.aio.insecure_channel("127.0.0.1:1")
    try:
        with pytest.raises(ValueError, match="'channel' cannot be combined with 'metadata' or 'interceptors'"):
            AsyncTaskHubGrpcClient(channel=channel, metadata=[("taskhub", "named")])
        with pytest.raises(ValueError, match="'taskhub' and 'token_credential'"):
            AsyncDurableTaskSchedulerClient(
                host_address="ignored:1", taskhub="orders", token_credential=None, channel=channel
            )
        AsyncTaskHubGrpcClient(channel=channel)  # a channel alone is used as it is
    finally:
        await channel.close()
