"""A real OTLP/gRPC collector for tests: implements OTLP's ``TraceService`` and keeps every span it receives."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    """Keeps every exported span with its resource's service name."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, trace_pb2.Span]] = []
        self._changed = threading.Condition()

    def Export(self, request: Any, context: Any) -> Any:
        with self._changed:
            for resource_spans in request.resource_spans:
                service = next(
                    (a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"), ""
                )
                for scope_spans in resource_spans.scope_spans:
                    self.spans.extend((service, span) for span in scope_spans.spans)
            self._changed.notify_all()
        return trace_service_pb2.ExportTraceServiceResponse()

    def wait_for(self, trace_id: int, count: int, timeout: float = 60.0) -> list[tuple[str, trace_pb2.Span]]:
        """The spans of ``trace_id`` once at least ``count`` have arrived (all there are after ``timeout``)."""
        wanted = trace_id.to_bytes(16, "big")

        def found() -> list[tuple[str, trace_pb2.Span]]:
            return [(s, span) for s, span in self.spans if span.trace_id == wanted]

        with self._changed:
            self._changed.wait_for(lambda: len(found()) >= count, timeout)
            return found()


@contextmanager
def serve_collector() -> Iterator[tuple[Collector, int]]:
    """A collector listening on a free loopback port: ``(collector, port)``."""
    keeper = Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(keeper, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield keeper, port
    finally:
        server.stop(None).wait()


def attributes(span: trace_pb2.Span) -> dict[str, Any]:
    """A received span's attributes as plain values (strings and integers are all our spans use)."""
    found: dict[str, Any] = {}
    for attribute in span.attributes:
        value = attribute.value
        found[attribute.key] = value.int_value if value.WhichOneof("value") == "int_value" else value.string_value
    return found
