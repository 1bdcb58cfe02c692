"""Latency of ordinary calls while a full listing and a purge of a large task hub run (prints, never asserts).

The emulator runs in its own process on a SQLite file seeded with N finished instances. While one client thread
lists every instance (``get_all_orchestration_states`` with the SDK's default page of 2**31-1) and then purges
them all by filter, other threads keep starting instances, raising events, pinging with Hello, and a
``GetWorkItems`` stream receives the started orchestrations. Each call's latency is recorded, per phase.

Variants of the emulator, each in a fresh process on a fresh copy of the store:
  thread     the shipped design: capped pages and purge chunks, each step on the admin thread
  loop       the same steps run on the event loop itself
  unbounded  on the loop, no page cap and one purge chunk (how the emulator behaved before the cap)

Usage: .venv/bin/python bench/admin_load.py [--instances 100000] [--variants loop,thread,unbounded] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402
from google.protobuf import empty_pb2, wrappers_pb2  # noqa: E402

from durabletask._proto import orchestrator_service_pb2 as pb  # noqa: E402
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc  # noqa: E402

VARIANTS = ("thread", "loop", "unbounded")


# The emulator process ------------------------------------------------------------------------------------
def serve(variant: str, db: str, port: int) -> None:
    """Runs the emulator in ``variant`` until stdin closes."""
    from dtscale_emulator.engine import queries
    from dtscale_emulator.server import EmulatorServer

    async def on_the_loop(work: Any) -> Any:
        return work()

    if variant in ("loop", "unbounded"):
        queries.storage_step = on_the_loop  # type: ignore[assignment]
    if variant == "unbounded":
        queries.MAX_PAGE = 1 << 31
        queries.PURGE_PAGE = 1 << 31
    server = EmulatorServer(port=port, db_path=db, health_ping_interval=1.0)
    server.start()
    print(f"ready {port}", flush=True)
    sys.stdin.read()
    server.close()


def seed(db: str, count: int) -> None:
    from dtscale_emulator.storage import InstanceRecord, SqliteBackend

    backend = SqliteBackend(db)
    with backend.transaction() as tx:
        tx.ensure_hub("default")
        for i in range(count):
            iid = f"old-{i:07d}"
            tx.put_instance(
                InstanceRecord(
                    "default", iid, "e", "Old", pb.ORCHESTRATION_STATUS_COMPLETED, 1, 2, input='"in"', output='"out"',
                    completed_at=2,
                )
            )  # fmt: skip
            tx.append_history("default", iid, [b"started-event", b"completed-event"], 0)
    backend.close()


# The load ------------------------------------------------------------------------------------------------
class Recorder:
    """Latency samples stamped with the wall-clock time they ended, sorted into phases afterwards."""

    def __init__(self) -> None:
        self.samples: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()

    def add(self, kind: str, seconds: float) -> None:
        with self._lock:
            self.samples.append((kind, time.time(), seconds * 1000))

    def by_phase(self, phases: dict[str, tuple[float, float]]) -> dict[tuple[str, str], list[float]]:
        found: dict[tuple[str, str], list[float]] = {}
        for kind, ended, ms in self.samples:
            for phase, (begin, end) in phases.items():
                if begin <= ended < end:
                    found.setdefault((phase, kind), []).append(ms)
        return found


def _timed(recorder: Recorder, kind: str, call: Any) -> Any:
    began = time.perf_counter()
    result = call()
    recorder.add(kind, time.perf_counter() - began)
    return result


def _starter(stub: Any, recorder: Recorder, stop: threading.Event, started: dict[str, float]) -> None:
    while not stop.is_set():
        iid = f"new-{uuid.uuid4().hex}"
        began = time.perf_counter()
        stub.StartInstance(pb.CreateInstanceRequest(instanceId=iid, name="Fresh"), timeout=60)
        recorder.add("start", time.perf_counter() - began)
        started[iid] = began
        time.sleep(0.005)


def _raiser(stub: Any, recorder: Recorder, stop: threading.Event) -> None:
    target = f"target-{uuid.uuid4().hex}"
    stub.StartInstance(pb.CreateInstanceRequest(instanceId=target, name="Target"), timeout=60)
    request = pb.RaiseEventRequest(instanceId=target, name="ping", input=wrappers_pb2.StringValue(value="1"))
    while not stop.is_set():
        _timed(recorder, "raise event", lambda: stub.RaiseEvent(request, timeout=60))
        time.sleep(0.005)


def _pinger(stub: Any, recorder: Recorder, stop: threading.Event) -> None:
    while not stop.is_set():
        _timed(recorder, "hello", lambda: stub.Hello(empty_pb2.Empty(), timeout=60))
        time.sleep(0.005)


def _receiver(stub: Any, recorder: Recorder, started: dict[str, float], calls: list[Any]) -> None:
    only_fresh = pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Fresh")])
    call = stub.GetWorkItems(pb.GetWorkItemsRequest(workItemFilters=only_fresh))
    calls.append(call)
    try:
        for item in call:
            if item.HasField("orchestratorRequest"):
                request = item.orchestratorRequest
                began = started.pop(request.instanceId, None)
                if began is not None:
                    recorder.add("work-item delivery", time.perf_counter() - began)
                done = pb.CompleteOrchestrationAction(orchestrationStatus=pb.ORCHESTRATION_STATUS_COMPLETED)
                stub.CompleteOrchestratorTask(
                    pb.OrchestratorResponse(
                        instanceId=request.instanceId,
                        completionToken=item.completionToken,
                        actions=[pb.OrchestratorAction(id=1, completeOrchestration=done)],
                    ),
                    timeout=60,
                )
    except (grpc.RpcError, ValueError):
        pass  # cancelled at the end (ValueError: a completion sent as the channel closed)


def admin(address: str) -> dict[str, Any]:
    """Lists every finished instance, then purges them all; runs in its own process, so its CPU work (decoding
    100,000 states) does not slow the probes' threads down and count as server latency."""
    from durabletask import client

    channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
    stub = pb_grpc.TaskHubSidecarServiceStub(channel)
    c = client.TaskHubGrpcClient(host_address=address)
    phases: dict[str, tuple[float, float]] = {}
    began = time.time()
    try:
        query = client.OrchestrationQuery(runtime_status=[client.OrchestrationStatus.COMPLETED])
        listed: Any = len(c.get_all_orchestration_states(query))
    except Exception as error:  # the unbounded variant's one answer can outgrow gRPC's 4 MiB message limit
        listed = f"nothing ({type(error).__name__}: {str(error)[:90]})"
    phases["listing"] = (began, time.time())
    purge = pb.PurgeInstancesRequest(
        purgeInstanceFilter=pb.PurgeInstanceFilter(runtimeStatus=[pb.ORCHESTRATION_STATUS_COMPLETED])
    )
    began = time.time()
    purged = stub.PurgeInstances(purge, timeout=3600).deletedInstanceCount
    phases["purge"] = (began, time.time())
    c.close()
    channel.close()
    return {"listed": listed, "purged": purged, "phases": phases}


def measure(variant: str, template: str, tmp: Path) -> dict[str, Any]:
    db = tmp / f"{variant}.db"
    shutil.copyfile(template, db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", variant, "--db", str(db), "--port", str(port)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().startswith("ready")
    address = f"127.0.0.1:{port}"
    recorder, stop, streams = Recorder(), threading.Event(), []  # type: ignore[var-annotated]
    started: dict[str, float] = {}
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.TaskHubSidecarServiceStub(channel)
    try:
        threads = [
            threading.Thread(target=_starter, args=(stub, recorder, stop, started)),
            threading.Thread(target=_raiser, args=(stub, recorder, stop)),
            threading.Thread(target=_pinger, args=(stub, recorder, stop)),
            threading.Thread(target=_receiver, args=(stub, recorder, started, streams), daemon=True),
        ]
        for t in threads:
            t.start()
        time.sleep(1.0)  # a baseline before the admin work
        try:
            run = subprocess.run(
                [sys.executable, __file__, "--admin", address], capture_output=True, text=True, env=env, timeout=3600
            )
            if run.returncode != 0:
                raise RuntimeError(run.stderr[-3000:])
            outcome = json.loads(run.stdout.splitlines()[-1])
            time.sleep(0.5)
        finally:
            stop.set()
            for t in threads[:3]:
                t.join()
            for call in streams:
                call.cancel()
    finally:
        channel.close()
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(60)
    phases = {name: tuple(span) for name, span in outcome.pop("phases").items()}
    outcome["listing_s"] = phases["listing"][1] - phases["listing"][0]
    outcome["purge_s"] = phases["purge"][1] - phases["purge"][0]
    phases["before"] = (0.0, phases["listing"][0])
    sorted_samples = recorder.by_phase(phases)  # type: ignore[arg-type]
    outcome["latency_ms"] = {f"{phase}/{kind}": _summary(v) for (phase, kind), v in sorted(sorted_samples.items())}
    return outcome


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"n": len(ordered), "p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}


def header(count: int) -> str:
    return f"Admin work beside ordinary calls: {count} finished instances, SQLite file, one client process"


def report(results: dict[str, dict[str, Any]], count: int) -> list[str]:
    lines = [header(count)]
    for variant, r in results.items():
        lines.append(
            f"  {variant:<10} listed {r['listed']} in {r['listing_s']:.1f} s, "
            f"purge of {r['purged']} in {r['purge_s']:.1f} s"
        )
        for key, s in r["latency_ms"].items():
            phase, kind = key.split("/")
            if phase in ("before", "listing", "purge"):
                lines.append(
                    f"    during {phase:<8} {kind:<19} n={s['n']:<5} p50 {s['p50']:7.1f} ms  p99 {s['p99']:7.1f} ms"
                    f"  max {s['max']:7.1f} ms"
                )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", action="store_true", help="print the raw figures as one JSON line too")
    parser.add_argument("--serve", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--admin", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.db, args.port)
        return 0
    if args.admin:
        print(json.dumps(admin(args.admin)))
        return 0
    print(header(args.instances), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        template = str(tmp / "template.db")
        seed(template, args.instances)
        results = {}
        for variant in args.variants.split(","):
            results[variant] = measure(variant, template, tmp)
            print("\n".join(report({variant: results[variant]}, args.instances)[1:]), flush=True)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
