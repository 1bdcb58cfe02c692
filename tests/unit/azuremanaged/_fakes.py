"""Test doubles for azure-identity credentials and a recording in-process gRPC server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import grpc
from google.protobuf import message_factory

from durabletask._proto import orchestrator_service_pb2 as pb


class FakeAccessToken(NamedTuple):
    token: str
    expires_on: int


class ManualClock:
    """Epoch seconds that only move when a test says so."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeCredential:
    """A blocking TokenCredential: counts requests and issues ``token-<n>`` valid for ``lifetime`` seconds.

    ``gate`` (when set) blocks each request until the test releases it, to hold a refresh in flight.
    """

    def __init__(self, clock: Callable[[], float], lifetime: float = 3600, gate: threading.Event | None = None):
        self.clock = clock
        self.lifetime = lifetime
        self.gate = gate
        self.calls = 0
        self.scopes: list[tuple[str, ...]] = []
        self.fail_with: Exception | None = None
        self._lock = threading.Lock()
        self.entered = threading.Event()

    def get_token(self, *scopes: str, **kwargs: Any) -> FakeAccessToken:
        with self._lock:
            self.calls += 1
            number = self.calls
            self.scopes.append(scopes)
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(10), "test never released the credential"
        if self.fail_with is not None:
            raise self.fail_with
        return FakeAccessToken(f"token-{number}", int(self.clock() + self.lifetime))


class FakeAsyncCredential:
    """An AsyncTokenCredential twin of :class:`FakeCredential`; ``release`` gates requests."""

    def __init__(self, clock: Callable[[], float], lifetime: float = 3600) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.calls = 0
        self.scopes: list[tuple[str, ...]] = []
        self.release: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def get_token(self, *scopes: str, **kwargs: Any) -> FakeAccessToken:
        self.calls += 1
        number = self.calls
        self.scopes.append(scopes)
        self.entered.set()
        if self.release is not None:
            await self.release.wait()
        return FakeAccessToken(f"token-{number}", int(self.clock() + self.lifetime))


@dataclass
class RecordingServer:
    """A gRPC server (plaintext or TLS) on an ephemeral port answering every TaskHubSidecarService call.

    Each call's method and invocation metadata (repeated keys joined by ``", "``) are appended to
    ``calls``. Hello and GetInstance answer with empty responses; GetWorkItems ends the stream at once.
    """

    port: int = 0
    calls: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    server: grpc.Server | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    call_seen: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.call_seen = threading.Condition(self._lock)

    def record(self, method: str, context: grpc.ServicerContext) -> None:
        headers: dict[str, str] = {}
        for key, value in context.invocation_metadata():
            if isinstance(value, str):
                # Repeated keys are joined so a header sent twice is visible to assertions.
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
        with self.call_seen:
            self.calls.append((method, headers))
            self.call_seen.notify_all()

    def reset(self) -> None:
        """Forget the calls seen so far."""
        with self.call_seen:
            self.calls.clear()

    def wait_for(self, method: str, timeout: float = 10.0) -> dict[str, str]:
        """The headers of the first call to ``method``, waiting for it to arrive."""
        with self.call_seen:
            found = self.call_seen.wait_for(lambda: self._first(method) is not None, timeout)
            assert found, f"no call to {method} within {timeout}s; saw {[m for m, _ in self.calls]}"
            headers = self._first(method)
            assert headers is not None
            return headers

    def _first(self, method: str) -> dict[str, str] | None:
        return next((headers for name, headers in self.calls if name.endswith("/" + method)), None)


def _handlers(recorder: RecordingServer) -> grpc.GenericRpcHandler:
    def unary(response: Any, method: str) -> grpc.RpcMethodHandler:
        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            recorder.record(method, context)
            return response

        return grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=lambda data: data, response_serializer=lambda msg: msg.SerializeToString()
        )

    def stream(method: str) -> grpc.RpcMethodHandler:
        def handle(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            recorder.record(method, context)
            return iter(())

        return grpc.unary_stream_rpc_method_handler(
            handle, request_deserializer=lambda data: data, response_serializer=lambda msg: msg.SerializeToString()
        )

    class Handler(grpc.GenericRpcHandler):
        def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
            method = handler_call_details.method  # type: ignore[attr-defined]
            name = method.rsplit("/", 1)[-1]
            if name == "GetWorkItems":
                return stream(method)
            if name == "GetInstance":
                return unary(pb.GetInstanceResponse(exists=False), method)
            response_type = _response_type(name)
            return unary(response_type(), method) if response_type is not None else None

    return Handler()


def _response_type(rpc: str) -> Any:
    service = pb.DESCRIPTOR.services_by_name["TaskHubSidecarService"]
    method = service.methods_by_name.get(rpc)
    if method is None:
        return None
    return message_factory.GetMessageClass(method.output_type)


def start_recording_server(credentials: grpc.ServerCredentials | None = None) -> RecordingServer:
    recorder = RecordingServer()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((_handlers(recorder),))
    address = "127.0.0.1:0" if credentials is None else "localhost:0"
    recorder.port = (
        server.add_insecure_port(address) if credentials is None else server.add_secure_port(address, credentials)
    )
    server.start()
    recorder.server = server
    return recorder
