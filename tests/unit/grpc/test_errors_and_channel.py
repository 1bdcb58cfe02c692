"""Status-code mapping, address parsing, channel options and the metadata interceptors."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest

from durabletask._errors import DurableTaskError
from durabletask._grpc import errors
from durabletask._grpc.channel import (
    DEFAULT_HOST_ADDRESS,
    DefaultAsyncClientInterceptorImpl,
    create_aio_channel,
    create_channel,
    parse_address,
    split_aio_interceptors,
)
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.grpc_options import (
    GrpcChannelOptions,
    GrpcClientResiliencyOptions,
    GrpcRetryPolicyOptions,
    GrpcWorkerResiliencyOptions,
)
from tests.unit.client.fake_sidecar import SidecarServer


class RawError(grpc.RpcError):
    """Stands in for the error objects grpc raises (they expose code() and details())."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


# ------------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("code", "cls", "also"),
    [
        (grpc.StatusCode.NOT_FOUND, errors.NotFoundError, None),
        (grpc.StatusCode.ALREADY_EXISTS, errors.AlreadyExistsError, None),
        (grpc.StatusCode.INVALID_ARGUMENT, errors.InvalidArgumentError, ValueError),
        (grpc.StatusCode.FAILED_PRECONDITION, errors.FailedPreconditionError, None),
        (grpc.StatusCode.UNAUTHENTICATED, errors.UnauthenticatedError, None),
        (grpc.StatusCode.PERMISSION_DENIED, errors.PermissionDeniedError, None),
        (grpc.StatusCode.UNAVAILABLE, errors.UnavailableError, None),
        (grpc.StatusCode.DEADLINE_EXCEEDED, errors.DeadlineExceededError, TimeoutError),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, errors.ResourceExhaustedError, None),
        (grpc.StatusCode.CANCELLED, errors.CancelledError, None),
        (grpc.StatusCode.INTERNAL, errors.InternalError, None),
        (grpc.StatusCode.UNIMPLEMENTED, errors.UnimplementedError, None),
        (grpc.StatusCode.DATA_LOSS, errors.RpcStatusError, None),
    ],
)
def test_each_status_maps_to_one_error(
    code: grpc.StatusCode, cls: type[Exception], also: type[Exception] | None
) -> None:
    mapped = errors.map_rpc_error(RawError(code, "why"), method="GetInstance")
    assert type(mapped) is cls
    assert isinstance(mapped, (DurableTaskError, grpc.RpcError))
    assert mapped.code() == code and mapped.details() == "why"
    assert str(mapped) == f"GetInstance failed with {code.name}: why"
    if also is not None:
        assert isinstance(mapped, also)


def test_mapping_is_idempotent_and_tolerates_odd_errors() -> None:
    mapped = errors.map_rpc_error(RawError(grpc.StatusCode.NOT_FOUND, "x"))
    assert errors.map_rpc_error(mapped) is mapped
    bare = errors.map_rpc_error(grpc.RpcError())
    assert type(bare) is errors.RpcStatusError and bare.code() == grpc.StatusCode.UNKNOWN


def test_error_class_lookup() -> None:
    assert errors.error_class(grpc.StatusCode.NOT_FOUND) is errors.NotFoundError
    assert errors.error_class(grpc.StatusCode.OK) is errors.RpcStatusError


# ------------------------------------------------------------------------------------------------ address


@pytest.mark.parametrize(
    ("address", "secure", "expected"),
    [
        (None, False, (DEFAULT_HOST_ADDRESS, False)),
        ("localhost:4001", True, ("localhost:4001", True)),
        ("https://my.scheduler.io", False, ("my.scheduler.io", True)),
        ("GRPCS://host:443/", False, ("host:443", True)),
        ("http://host:80", True, ("host:80", False)),
        ("grpc://host:5000", True, ("host:5000", False)),
    ],
)
def test_address_schemes_decide_tls(address: str | None, secure: bool, expected: tuple[str, bool]) -> None:
    assert parse_address(address, secure) == expected


def test_default_address_matches_the_sidecar_port() -> None:
    assert DEFAULT_HOST_ADDRESS == "localhost:4001"


# ------------------------------------------------------------------------------------------------ options


def test_channel_options_become_grpc_arguments() -> None:
    options = GrpcChannelOptions(
        max_receive_message_length=10,
        max_send_message_length=20,
        keepalive_time_ms=30,
        keepalive_timeout_ms=40,
        keepalive_permit_without_calls=True,
        retry_policy=GrpcRetryPolicyOptions(max_attempts=3),
        raw_options=[("grpc.primary_user_agent", "me")],
    )
    args = dict(options.to_grpc_options())
    assert args["grpc.primary_user_agent"] == "me"
    assert (args["grpc.max_receive_message_length"], args["grpc.max_send_message_length"]) == (10, 20)
    assert (args["grpc.keepalive_time_ms"], args["grpc.keepalive_timeout_ms"]) == (30, 40)
    assert args["grpc.keepalive_permit_without_calls"] == 1 and args["grpc.enable_retries"] == 1
    policy = json.loads(args["grpc.service_config"])["methodConfig"][0]["retryPolicy"]
    assert policy == {
        "maxAttempts": 3,
        "initialBackoff": "0.05s",
        "maxBackoff": "0.25s",
        "backoffMultiplier": 2.0,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    assert GrpcChannelOptions().to_grpc_options() == []


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: GrpcRetryPolicyOptions(max_attempts=1), "max_attempts"),
        (lambda: GrpcRetryPolicyOptions(initial_backoff_seconds=0), "initial_backoff_seconds"),
        (lambda: GrpcRetryPolicyOptions(initial_backoff_seconds=1, max_backoff_seconds=0.5), "max_backoff_seconds"),
        (lambda: GrpcRetryPolicyOptions(retryable_status_codes=[]), "retryable_status_codes"),
        (lambda: GrpcRetryPolicyOptions(initial_backoff_seconds=1e-12), "too small"),
        (lambda: GrpcWorkerResiliencyOptions(hello_timeout_seconds=0), "hello_timeout_seconds"),
        (lambda: GrpcWorkerResiliencyOptions(reconnect_backoff_cap_seconds=0.5), "reconnect_backoff_cap_seconds"),
        (lambda: GrpcClientResiliencyOptions(channel_recreate_failure_threshold=-1), "threshold"),
        (lambda: GrpcClientResiliencyOptions(min_recreate_interval_seconds=-1), "min_recreate_interval_seconds"),
    ],
)
def test_invalid_options_are_refused(factory: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        factory()


def test_options_are_mutable_with_1_12_defaults() -> None:
    worker = GrpcWorkerResiliencyOptions()
    assert (worker.hello_timeout_seconds, worker.silent_disconnect_timeout_seconds) == (30.0, 120.0)
    assert GrpcClientResiliencyOptions().channel_recreate_failure_threshold == 5
    worker.hello_timeout_seconds = 1
    assert worker.hello_timeout_seconds == 1
    with pytest.raises(AttributeError):  # slots, as Microsoft's: a misspelt option is not silently kept
        worker.hello_timout_seconds = 1  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------------------- interceptors


@pytest.fixture
def sidecar() -> Any:
    server = SidecarServer().start()
    yield server
    server.stop()


def test_sync_channel_adds_metadata_to_unary_and_streaming_calls(sidecar: SidecarServer) -> None:
    channel = create_channel(f"http://{sidecar.address}", metadata=[("taskhub", "h1"), ("x-extra", "1")])
    try:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.GetInstance(pb.GetInstanceRequest(instanceId="a"), metadata=[("per-call", "yes")])
        list(stub.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId="a")))
    finally:
        channel.close()
    unary, stream = sidecar.fake.received
    assert unary.metadata["taskhub"] == "h1" and unary.metadata["x-extra"] == "1"
    assert unary.metadata["per-call"] == "yes"  # the caller's own metadata is kept
    assert stream.metadata["taskhub"] == "h1"


class CountingInterceptor(DefaultAsyncClientInterceptorImpl):
    """Computes headers per call, as a token-refreshing interceptor would."""

    def __init__(self) -> None:
        super().__init__([])
        self.calls = 0

    async def metadata(self) -> list[tuple[str, str]]:
        self.calls += 1
        return [("authorization", f"Bearer t{self.calls}")]


async def test_aio_channel_adds_metadata_to_unary_and_streaming_calls(sidecar: SidecarServer) -> None:
    dynamic = CountingInterceptor()
    channel = create_aio_channel(sidecar.address, metadata=[("taskhub", "h2")], interceptors=[dynamic])
    try:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        await stub.GetInstance(pb.GetInstanceRequest(instanceId="a"))
        _ = [c async for c in stub.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId="a"))]
    finally:
        await channel.close()
    unary, stream = sidecar.fake.received
    assert (unary.metadata["taskhub"], unary.metadata["authorization"]) == ("h2", "Bearer t1")
    assert (stream.metadata["taskhub"], stream.metadata["authorization"]) == ("h2", "Bearer t2")


class UnaryOnly(grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(client_call_details, request)


def test_split_keeps_single_kind_interceptors_and_expands_multi_kind_ones() -> None:
    multi = DefaultAsyncClientInterceptorImpl([("a", "b")])
    single = UnaryOnly()
    split = split_aio_interceptors([single, multi])
    assert split[0] is single and split[1] is multi
    kinds = [
        grpc.aio.UnaryStreamClientInterceptor,
        grpc.aio.StreamUnaryClientInterceptor,
        grpc.aio.StreamStreamClientInterceptor,
    ]
    assert len(split) == 5
    assert [sum(isinstance(x, k) for k in kinds) for x in split[2:]] == [1, 1, 1]
    assert all(any(isinstance(x, k) for x in split[2:]) for k in kinds)
