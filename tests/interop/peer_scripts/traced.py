"""Runs one traced orchestration with whichever ``durabletask`` this interpreter imports; prints the spans as JSON.

``python traced.py <client|worker|both> <address> <taskhub> <instance id>``: ``client`` schedules the
``traced`` orchestration and returns; ``worker`` runs its orchestrators and activities until the instance
has finished; ``both`` does the two. Spans are exported in memory and printed as one JSON list at the end.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from durabletask import client, task, worker


def double(ctx: task.ActivityContext, value: int) -> int:
    return value * 2


def child(ctx: task.OrchestrationContext, value: int) -> Any:
    return (yield ctx.call_activity(double, input=value))


def traced(ctx: task.OrchestrationContext, value: int) -> Any:
    value = yield ctx.call_activity(double, input=value)
    yield ctx.create_timer(timedelta(milliseconds=100))
    value = yield ctx.call_sub_orchestrator(child, input=value, instance_id=f"{ctx.instance_id}-child")
    ctx.send_event(f"{ctx.instance_id}-nobody", "done", data=value)
    return value


def spans_as_json(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    found = []
    for span in exporter.get_finished_spans():
        found.append(
            {
                "name": span.name,
                "kind": span.kind.name,
                "trace_id": f"{span.context.trace_id:032x}",
                "span_id": f"{span.context.span_id:016x}",
                "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                "attributes": dict(span.attributes or {}),
                "status": span.status.status_code.name,
                "description": span.status.description,
            }
        )
    return found


def main() -> None:
    role, address, taskhub, instance_id = sys.argv[1:5]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metadata = [("taskhub", taskhub)]
    c = client.TaskHubGrpcClient(host_address=address, metadata=metadata)
    if role in ("client", "both"):
        c.schedule_new_orchestration(traced, input=1, instance_id=instance_id)
    if role in ("worker", "both"):
        w = worker.TaskHubGrpcWorker(host_address=address, metadata=metadata)
        for fn in (traced, child):
            w.add_orchestrator(fn)
        w.add_activity(double)
        w.start()
        try:
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            assert state is not None and state.runtime_status.name == "COMPLETED", state
        finally:
            w.stop()
    provider.shutdown()
    print(json.dumps(spans_as_json(exporter)))


if __name__ == "__main__":
    main()
