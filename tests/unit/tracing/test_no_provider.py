"""OpenTelemetry installed but no tracer provider set (the common case): no spans are started, the OpenTelemetry
SDK and pydantic's models are never imported by the worker's runners, and received trace context still reaches
the user's code. Run in a fresh interpreter: other tests set a provider for their whole process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import json, logging, sys
    from opentelemetry import trace
    from durabletask._proto import orchestrator_service_pb2 as pb
    from durabletask._registry import Registry
    from durabletask._tracing import otel
    from durabletask._trace_context import Parent
    from durabletask._tracing.orchestration import OrchestrationTracer
    from durabletask._worker.activity_runner import ActivityRunner
    from durabletask._worker.entity_runner import EntityRunner

    started = []
    real_live_span = otel.live_span

    def counting_live_span(name, *args, **kwargs):
        started.append(name)
        return real_live_span(name, *args, **kwargs)

    otel.live_span = counting_live_span
    seen = []

    def current_span_id():
        return trace.get_current_span().get_span_context().span_id

    def double(ctx, value: int) -> int:
        seen.append(current_span_id())
        return value * 2

    def counter(ctx, value: int):
        seen.append(current_span_id())
        ctx.set_state((ctx.get_state() or 0) + value)

    registry = Registry()
    registry.add_activity(double)
    registry.add_entity(counter)
    log = logging.getLogger("t")
    parent = Parent(0x1234, 0xABC, 1)
    instance = pb.OrchestrationInstance(instanceId="o")
    activity = pb.ActivityRequest(name="double", taskId=1, orchestrationInstance=instance)
    activity.input.value = "2"
    ActivityRunner(registry, logger=log).run(activity, "t1")
    activity.parentTraceContext.CopyFrom(parent.to_proto())
    ActivityRunner(registry, logger=log).run(activity, "t2")
    batch = pb.EntityBatchRequest(instanceId="@counter@k")
    batch.operations.add(operation="add", requestId="r1").input.value = "1"
    traced = batch.operations.add(operation="add", requestId="r2")
    traced.input.value = "1"
    traced.traceContext.CopyFrom(parent.to_proto())
    EntityRunner(registry, logger=log).run(batch, [], "t3")
    tracer = OrchestrationTracer(emit=True)
    request = pb.OrchestratorRequest(instanceId="o")
    started_event = request.newEvents.add()
    started_event.executionStarted.name = "chain"
    turn = tracer.begin(request, [])
    print(json.dumps({
        "spans": started,
        "seen": seen,
        "record": turn.record,
        "sdk": "opentelemetry.sdk.trace" in sys.modules,
        "pydantic_models": "pydantic.main" in sys.modules,
    }))
    """
)


def test_no_spans_and_no_sdk_import_without_a_provider_and_context_still_reaches_user_code() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OTEL_PYTHON_TRACER_PROVIDER", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    # Activity and entity operation, each without and with a received context: the received span is current.
    assert found["seen"] == [0, 0xABC, 0, 0xABC]
    assert found["spans"] == []
    assert found["record"] is False
    assert found["sdk"] is False
    assert found["pydantic_models"] is False
