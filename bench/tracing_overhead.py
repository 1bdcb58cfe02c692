"""What tracing costs: the 3-activity chain's throughput with and without OpenTelemetry, side by side.

Variants, each a fresh process running our in-memory emulator, worker and client (the whole system on the
same cores, as the throughput workload does):

- ``before``: ``no-otel`` on the code before tracing (``--baseline``, a checkout of it, e.g. a git worktree);
- ``no-otel``: ``opentelemetry`` cannot be imported (what an install without the extra sees);
- ``otel-noop``: installed, but no SDK provider set (the API's no-op tracer);
- ``otel-export``: the SDK's ``TracerProvider`` with a ``BatchSpanProcessor`` and an exporter that encodes each
  batch as the OTLP exporters do (``encode_spans``, protobuf bytes) and discards it.

Rounds interleave the variants so a machine's changing load falls on all of them alike.

    .venv/bin/python bench/tracing_overhead.py [--count 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("before", "no-otel", "otel-noop", "otel-export")

CHILD = """
import json, sys, time
variant, count = sys.argv[1], int(sys.argv[2])
if variant in ("no-otel", "before"):
    class NoOpenTelemetry:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(name)
    sys.meta_path.insert(0, NoOpenTelemetry())
exported = [0]
if variant == "otel-export":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Encoding(SpanExporter):
        def export(self, spans):
            encode_spans(spans).SerializeToString()
            exported[0] += len(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Encoding()))
    trace.set_tracer_provider(provider)
sys.path.insert(0, "bench")
from concurrent.futures import ThreadPoolExecutor
from durabletask import client, worker
from dtscale_emulator.server import EmulatorServer
from workloads import chain3, step

server = EmulatorServer(port=0, in_memory=True)
server.start()
address = f"localhost:{server.port}"
w = worker.TaskHubGrpcWorker(host_address=address)
w.add_orchestrator(chain3)
w.add_activity(step)
w.start()
c = client.TaskHubGrpcClient(host_address=address)
for i in range(20):  # warm-up
    c.wait_for_orchestration_completion(c.schedule_new_orchestration(chain3, input=i), timeout=120)
start, cpu = time.perf_counter(), time.process_time()
ids = [c.schedule_new_orchestration(chain3, input=i) for i in range(count)]
with ThreadPoolExecutor(max_workers=4) as pool:
    states = list(pool.map(lambda iid: c.wait_for_orchestration_completion(iid, timeout=600), ids))
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
assert all(s is not None and s.runtime_status.name == "COMPLETED" for s in states)
w.stop()
server.stop()
if variant == "otel-export":
    provider.shutdown()
print(json.dumps({"per_second": count / elapsed, "cpu_ms": 1000 * cpu / count, "exported": exported[0]}))
"""


def run(variant: str, count: int, baseline: Path | None) -> dict[str, float]:
    code = baseline if variant == "before" and baseline is not None else ROOT
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, variant, str(count)],
        cwd=code, env=env, capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=300, help="orchestrations per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of all variants")
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout of the code before tracing")
    args = parser.parse_args()
    variants = VARIANTS if args.baseline is not None else VARIANTS[1:]
    rates: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    for round_no in range(args.rounds):
        order = variants if round_no % 2 == 0 else tuple(reversed(variants))
        for variant in order:
            result = run(variant, args.count, args.baseline)
            rates[variant].append(result["per_second"])
            cpu[variant].append(result["cpu_ms"])
            print(
                f"round {round_no + 1} {variant:12} {result['per_second']:7.1f}/s  "
                f"{result['cpu_ms']:6.2f} CPU ms/orchestration  spans {result['exported']:.0f}",
                flush=True,
            )
    base, base_cpu = statistics.median(rates["no-otel"]), statistics.median(cpu["no-otel"])
    print("\nvariant        median/s   vs no-otel   CPU ms/orch   vs no-otel   all rounds (/s)")
    for variant in variants:
        med, med_cpu = statistics.median(rates[variant]), statistics.median(cpu[variant])
        runs = ", ".join(f"{r:.1f}" for r in rates[variant])
        print(
            f"{variant:12} {med:9.1f}   {100 * (med / base - 1):+8.1f} %   {med_cpu:11.2f}   "
            f"{100 * (med_cpu / base_cpu - 1):+8.1f} %   {runs}"
        )


if __name__ == "__main__":
    main()
