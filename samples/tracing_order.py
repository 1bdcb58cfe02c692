"""The demo's order workflow, traced with OpenTelemetry: one trace from the request to every activity, as a tree.

Needs the OpenTelemetry SDK (``pip install dtscale[opentelemetry] opentelemetry-sdk``). Spans are collected in
memory and printed when the order is done. With ``--otlp-endpoint`` they also go to an OTLP/gRPC collector
(Jaeger, Tempo, the OpenTelemetry Collector...), and the embedded emulator sends its own spans there too:

    docker run --rm -p 16686:16686 -p 4317:4317 jaegertracing/jaeger   # its UI: http://localhost:16686
    pip install "dtscale[opentelemetry,emulator-otlp]"
    python samples/tracing_order.py --otlp-endpoint http://localhost:4317
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import Runtime, parse_args
from demo import Order, charge_payment, process_order, reserve_inventory, ship
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from durabletask import client


def print_tree(spans: list[ReadableSpan]) -> None:
    by_id = {s.context.span_id: s for s in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in by_id else None
        children.setdefault(parent, []).append(span)

    def show(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start_time or 0, s.name)):
            ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
            kind = span.kind.name.lower()
            status = " ERROR" if span.status.status_code.name == "ERROR" else ""
            print(f"{'  ' * depth}{span.name} [{kind}]{status} {ms:.1f} ms")
            show(span.context.span_id, depth + 1)

    show(None, 0)


def tracer_provider(otlp_endpoint: str | None) -> tuple[TracerProvider, InMemorySpanExporter]:
    """The application's tracing setup: spans kept in memory to print, and sent to a collector if one is given."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "order-service"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        # http:// is plaintext (a local Jaeger or collector); https:// uses TLS.
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint)))
    return provider, exporter


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--otlp-endpoint",
        help="also send the spans to this OTLP/gRPC collector, e.g. "
        "http://localhost:4317 (Jaeger); the embedded emulator sends its own spans there too",
    )


def main() -> int:
    args = parse_args(__doc__ or "", options)
    provider, exporter = tracer_provider(args.otlp_endpoint)
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("order-service")

    with Runtime.from_args(args) as runtime, runtime.worker() as w:
        w.add_orchestrator(process_order)
        for activity in (reserve_inventory, charge_payment, ship):
            w.add_activity(activity)
        w.start()
        c = runtime.client()
        order = Order(order_id="A-1001", items=["book", "lamp", "mug"], amount=42.5)
        # What a web framework's instrumentation would have open while handling "POST /orders".
        with tracer.start_as_current_span("POST /orders", kind=trace.SpanKind.SERVER) as request:
            instance_id = c.schedule_new_orchestration(process_order, input=order)
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
        c.close()
    if state is None or state.runtime_status != client.OrchestrationStatus.COMPLETED:
        print(f"the order did not complete: {state}", file=sys.stderr)
        return 1
    trace_id = request.get_span_context().trace_id
    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == trace_id]
    print(f"trace {trace_id:032x}: {len(spans)} spans")
    print_tree(spans)
    provider.shutdown()  # sends what is still batched for the collector
    if args.otlp_endpoint:
        print(f"sent to {args.otlp_endpoint} with the emulator's own spans: open trace {trace_id:032x} there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
