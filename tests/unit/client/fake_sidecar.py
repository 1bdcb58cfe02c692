"""An in-process gRPC sidecar for client tests: scripted replies, recorded requests and metadata."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

Handler = Callable[[Any, grpc.ServicerContext], Any]


@dataclass
class Received:
    method: str
    request: Any
    metadata: dict[str, str]
    deadline: float | None


@dataclass
class FakeSidecar:
    """Answers each RPC from ``handlers`` (or with an empty response) and records what arrived.

    ``fail_next[method] = [codes...]`` aborts the next calls of ``method`` with those codes, in order.
    """

    handlers: dict[str, Handler] = field(default_factory=dict)
    fail_next: dict[str, list[grpc.StatusCode]] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def calls(self, method: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.method == method]

    def handle(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        remaining = context.time_remaining()
        if remaining is not None and remaining > 1e9:  # gRPC reports "no deadline" as a huge number
            remaining = None
        with self._lock:
            self.received.append(Received(method, request, dict(context.invocation_metadata()), remaining))
            failures = self.fail_next.get(method)
            code = failures.pop(0) if failures else None
        if code is not None:
            context.abort(code, f"scripted {code.name}")
        handler = self.handlers.get(method)
        if handler is not None:
            return handler(request, context)
        return [] if method == "StreamInstanceHistory" else _empty_response(method)


def _empty_response(method: str) -> Any:
    output = pb.DESCRIPTOR.services_by_name["TaskHubSidecarService"].methods_by_name[method].output_type
    return getattr(pb, output.name)()


class _Servicer(pb_grpc.TaskHubSidecarServiceServicer):
    def __init__(self, fake: FakeSidecar) -> None:
        self._fake = fake

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name not in pb.DESCRIPTOR.services_by_name["TaskHubSidecarService"].methods_by_name:
            return object.__getattribute__(self, name)
        fake = object.__getattribute__(self, "_fake")
        if name == "StreamInstanceHistory":

            def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                yield from fake.handle(name, request, context) or ()

            return stream
        return lambda request, context: fake.handle(name, request, context)


class SidecarServer:
    """Runs a :class:`FakeSidecar` on ``127.0.0.1`` at a free port."""

    def __init__(self) -> None:
        self.fake = FakeSidecar()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_TaskHubSidecarServiceServicer_to_server(_Servicer(self.fake), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"

    def start(self) -> SidecarServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None).wait(5)
