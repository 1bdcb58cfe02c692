"""``--otlp-endpoint``: the emulator's own spans reach a real OTLP/gRPC collector, joined to the client's trace.

The collector is a gRPC server implementing OTLP's ``TraceService`` (from ``opentelemetry-proto``) that keeps
what it receives; the emulator runs as its own process, exactly as an operator starts it. Our traced client and
worker record their spans in this process's in-memory exporter, so both sides of the trace can be compared.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1 import trace_pb2

from durabletask import client, task, worker
from tests.e2e.tracing_support import exporter
from tests.support.otlp_collector import Collector, attributes, serve_collector

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def collector() -> Iterator[tuple[Collector, int]]:
    with serve_collector() as running:
        yield running


@pytest.fixture
def emulator_address(collector: tuple[Collector, int]) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--in-memory", "--port", "0", "--no-dashboard",
         "--log-level", "WARNING", "--otlp-endpoint", f"http://127.0.0.1:{collector[1]}"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Durable Task emulator listening on "), line
        yield line.rsplit(" ", 1)[1].strip()
        proc.terminate()
        assert proc.wait(15) == 0
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def double(ctx: task.ActivityContext, value: int) -> int:
    return value * 2


def doubled(ctx: task.OrchestrationContext, value: int) -> Any:
    return (yield ctx.call_activity(double, input=value))


def test_server_spans_arrive_at_the_collector_in_the_clients_trace(
    collector: tuple[Collector, int], emulator_address: str
) -> None:
    spans = exporter()
    spans.clear()
    with worker.TaskHubGrpcWorker(host_address=emulator_address) as w:
        w.add_orchestrator(doubled)
        w.add_activity(double)
        w.start()
        c = client.TaskHubGrpcClient(host_address=emulator_address)
        iid = c.schedule_new_orchestration(doubled, input=21)
        state = c.wait_for_orchestration_completion(iid, timeout=60)
        c.close()
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    ours = {s.name: s for s in spans.get_finished_spans()}
    create, orchestration = ours["create_orchestration:doubled"], ours["orchestration:doubled"]
    call = next(s for s in spans.get_finished_spans() if s.name == "activity:double" and s.kind.name == "CLIENT")
    trace_id = create.context.trace_id
    assert orchestration.context.trace_id == trace_id

    # Two orchestration turns and one activity, each queued, dispatched and committed.
    received = collector[0].wait_for(trace_id, 9)
    assert {service for service, _ in received} == {"durabletask-emulator"}
    by_label = {"create": create, "orchestration": orchestration, "activity call": call}
    labels = {c.context.span_id.to_bytes(8, "big"): label for label, c in by_label.items()}
    got = sorted((span.name, labels.get(span.parent_span_id, "?")) for _, span in received)
    assert got == sorted([
        # First turn: the orchestration span does not exist yet, so waiting and dispatch are the request's.
        ("emulator.queue:doubled", "create"),
        ("emulator.dispatch:doubled", "create"),
        # The worker has now told its span: the commit and every later turn belong to the orchestration.
        ("emulator.commit:doubled", "orchestration"),
        ("emulator.queue:double", "activity call"),
        ("emulator.dispatch:double", "activity call"),
        ("emulator.commit:double", "activity call"),
        ("emulator.queue:doubled", "orchestration"),
        ("emulator.dispatch:doubled", "orchestration"),
        ("emulator.commit:doubled", "orchestration"),
    ])  # fmt: skip

    named = {(span.name, span.parent_span_id): span for _, span in received}
    create_id, orchestration_id = (s.context.span_id.to_bytes(8, "big") for s in (create, orchestration))
    activity_queue = named[("emulator.queue:double", call.context.span_id.to_bytes(8, "big"))]
    assert attributes(activity_queue) == {
        "durabletask.type": "activity",
        "durabletask.task.name": "double",
        "durabletask.task.instance_id": iid,
        "durabletask.task.task_id": int(call.attributes["durabletask.task.task_id"]),
        "emulator.task_hub": "default",
        "emulator.stream_id": attributes(activity_queue)["emulator.stream_id"],
    }
    queued = named[("emulator.queue:doubled", create_id)]
    assert {k: v for k, v in attributes(queued).items() if k != "emulator.stream_id"} == {
        "durabletask.type": "orchestration",
        "durabletask.task.name": "doubled",
        "durabletask.task.instance_id": iid,
        "emulator.new_events": 2,
        "emulator.task_hub": "default",
    }
    commits = sorted(
        (span for _, span in received if span.name == "emulator.commit:doubled"), key=lambda s: s.start_time_unix_nano
    )
    assert [attributes(s)["emulator.actions"] for s in commits] == [1, 1]  # schedule the activity; complete
    # The activity waited from the commit of the turn that scheduled it until a stream leased it.
    assert activity_queue.start_time_unix_nano == commits[0].end_time_unix_nano
    for _, span in received:
        assert span.start_time_unix_nano <= span.end_time_unix_nano
        assert span.status.code != trace_pb2.Status.STATUS_CODE_ERROR
    assert orchestration_id in {span.parent_span_id for _, span in received}


BLOCKED = textwrap.dedent(
    """
    import sys

    class NoOpenTelemetry:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoOpenTelemetry())
    from dtscale_emulator.__main__ import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_the_flag_without_the_extra_is_a_clear_startup_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED, "--db", str(tmp_path / "x.db"), "--port", "0", "--no-dashboard",
         "--otlp-endpoint", "http://127.0.0.1:4317"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "listening" not in done.stdout
    assert done.stderr.startswith(
        "durabletask-emulator: --otlp-endpoint needs the OpenTelemetry SDK and OTLP exporter: "
        "pip install 'dtscale-emulator[otlp]' (No module named 'opentelemetry"
    ), done.stderr
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


def test_the_endpoint_can_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from dtscale_emulator.__main__ import build_parser

    assert build_parser().parse_args([]).otlp_endpoint is None
    monkeypatch.setenv("DTS_EMULATOR_OTLP_ENDPOINT", "http://collector:4317")
    assert build_parser().parse_args([]).otlp_endpoint == "http://collector:4317"
    assert build_parser().parse_args(["--otlp-endpoint", "http://other:4317"]).otlp_endpoint == "http://other:4317"


def test_the_exporter_keeps_the_callers_sampling_and_trace_state_and_records_errors(
    collector: tuple[Collector, int],
) -> None:
    from dtscale_emulator.ops.tracing import Phase
    from dtscale_emulator.ops.tracing.otlp import OtlpExport
    from durabletask._trace_context import Parent

    keeper, port = collector
    export = OtlpExport(f"http://127.0.0.1:{port}")
    trace_id, parent_id = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331
    sampled, unsampled = Parent(trace_id, parent_id, 1, "vendor=abc"), Parent(trace_id, parent_id, 0)
    refused = ValueError("the lease is gone")
    export.record(Phase("emulator.commit:x", sampled, {"emulator.task_hub": "h"}, 1_000, 2_000, refused))
    export.record(Phase("emulator.queue:x", unsampled, {"emulator.task_hub": "h"}, 1_000, 2_000))
    assert export.flush()
    export.shutdown()
    [(service, span)] = keeper.wait_for(trace_id, 1)
    assert (service, span.name, span.parent_span_id.hex(), span.trace_state) == (
        "durabletask-emulator",
        "emulator.commit:x",
        f"{parent_id:016x}",
        "vendor=abc",
    )
    assert (span.start_time_unix_nano, span.end_time_unix_nano, attributes(span)) == (
        1_000,
        2_000,
        {"emulator.task_hub": "h"},
    )
    assert (span.status.code, span.status.message) == (
        trace_pb2.Status.STATUS_CODE_ERROR,
        "ValueError: the lease is gone",
    )
    assert [(e.name, attributes(e)) for e in span.events] == [
        ("exception", {"exception.type": "ValueError", "exception.message": "the lease is gone"})
    ]
    assert len(keeper.spans) == 1  # the unsampled trace sent nothing
