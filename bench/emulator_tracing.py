"""What the emulator's own spans cost it: its CPU time per 3-activity chain with ``--otlp-endpoint`` off and on.

The emulator runs as its own process (``python -m emulator --in-memory``), as an operator starts it; a driver
process runs our worker and client, traced with an SDK ``TracerProvider`` in every variant (so work items
carry trace context and the driver's cost is the same everywhere). Variants:

- ``before``: the emulator of another checkout (``--baseline``, e.g. a git worktree of the code before the
  tracing hooks), no flag;
- ``off``: this checkout's emulator without the flag (the hooks present, tracing off);
- ``on``: with ``--otlp-endpoint`` pointing at a collector in this process (a gRPC ``TraceService`` that
  counts what it receives), so every span is encoded and sent over OTLP/gRPC.

The figure that matters is the emulator process's CPU time (``/proc/<pid>/stat``) per orchestration over the
measured chains; throughput is printed too but moves with the shared machine's load. Rounds interleave the
variants so that load falls on all of them alike.

    .venv/bin/python bench/emulator_tracing.py [--count 300] [--rounds 5] [--baseline /tmp/old-checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("before", "off", "on")
TICKS = os.sysconf("SC_CLK_TCK")

DRIVER = """
import json, logging, sys, time
logging.disable(logging.INFO)
sys.path.insert(0, "bench")
from concurrent.futures import ThreadPoolExecutor
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())  # spans recorded and dropped: work items carry trace context
from durabletask import client, worker
from workloads import chain3, step

address, count = sys.argv[1], int(sys.argv[2])
w = worker.TaskHubGrpcWorker(host_address=address)
w.add_orchestrator(chain3)
w.add_activity(step)
w.start()
c = client.TaskHubGrpcClient(host_address=address)
for i in range(20):  # warm-up
    c.wait_for_orchestration_completion(c.schedule_new_orchestration(chain3, input=i), timeout=120)
print("warm", flush=True)
sys.stdin.readline()
start = time.perf_counter()
ids = [c.schedule_new_orchestration(chain3, input=i) for i in range(count)]
with ThreadPoolExecutor(max_workers=4) as pool:
    states = list(pool.map(lambda iid: c.wait_for_orchestration_completion(iid, timeout=600), ids))
elapsed = time.perf_counter() - start
assert all(s is not None and s.runtime_status.name == "COMPLETED" for s in states)
print(json.dumps({"per_second": count / elapsed}), flush=True)
w.stop()
"""


class CountingCollector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.spans = 0
        self._lock = threading.Lock()

    def Export(self, request: Any, context: Any) -> Any:
        received = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        with self._lock:
            self.spans += received
        return trace_service_pb2.ExportTraceServiceResponse()


@contextmanager
def collector() -> Iterator[tuple[CountingCollector, int]]:
    keeper = CountingCollector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(keeper, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield keeper, port
    finally:
        server.stop(None).wait()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def run(variant: str, count: int, baseline: Path | None, collector_port: int) -> dict[str, float]:
    code = baseline if variant == "before" and baseline is not None else ROOT
    flags = ["--otlp-endpoint", f"http://127.0.0.1:{collector_port}"] if variant == "on" else []
    emulator = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--in-memory", "--port", "0", "--no-dashboard",
         "--log-level", "WARNING", *flags],
        cwd=code, env={**os.environ, "PYTHONPATH": str(code)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert emulator.stdout is not None
        address = emulator.stdout.readline().rsplit(" ", 1)[1].strip()
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, address, str(count)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert driver.stdin is not None and driver.stdout is not None
        assert driver.stdout.readline().strip() == "warm"
        before = cpu_seconds(emulator.pid)
        driver.stdin.write("go\n")
        driver.stdin.flush()
        result: dict[str, float] = json.loads(driver.stdout.readline())
        result["cpu_ms"] = 1000 * (cpu_seconds(emulator.pid) - before) / count
        driver.wait(60)
    finally:
        emulator.terminate()
        emulator.wait(30)
        if emulator.stdout is not None:
            emulator.stdout.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=300, help="orchestrations per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of all variants")
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout of the emulator before the hooks")
    args = parser.parse_args()
    variants = VARIANTS if args.baseline is not None else VARIANTS[1:]
    rates: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    with collector() as (keeper, port):
        for round_no in range(args.rounds):
            for variant in variants if round_no % 2 == 0 else tuple(reversed(variants)):
                spans = keeper.spans
                result = run(variant, args.count, args.baseline, port)
                rates[variant].append(result["per_second"])
                cpu[variant].append(result["cpu_ms"])
                print(
                    f"round {round_no + 1} {variant:7} {result['per_second']:7.1f}/s  "
                    f"emulator {result['cpu_ms']:6.2f} CPU ms/orchestration  spans received {keeper.spans - spans}",
                    flush=True,
                )
    base, base_cpu = statistics.median(rates["off"]), statistics.median(cpu["off"])
    print("\nvariant  median/s   vs off   emulator CPU ms/orch   vs off   all rounds (CPU ms/orch)")
    for variant in variants:
        med, med_cpu = statistics.median(rates[variant]), statistics.median(cpu[variant])
        runs = ", ".join(f"{r:.2f}" for r in cpu[variant])
        print(
            f"{variant:7} {med:8.1f}  {100 * (med / base - 1):+6.1f} %  {med_cpu:20.2f}  "
            f"{100 * (med_cpu / base_cpu - 1):+6.1f} %   {runs}"
        )


if __name__ == "__main__":
    main()
