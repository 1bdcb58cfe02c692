"""Peak memory of a large payload's round trip through a payload store, client and worker measured apart.

Three processes: the emulator, a worker and a client. The client starts an orchestration and sends it the
payload as event data; the orchestration passes it to an activity, which returns it, and returns that as its
output; the client reads the output back. The payload goes through the store four times.
Each payload process reports its peak resident memory above its own baseline (taken once the payload value
exists, so the caller's own copy is not counted), as a multiple of the payload's size.

    .venv/bin/python bench/large_payloads.py                  # 50 MiB through a folder store
    .venv/bin/python bench/large_payloads.py --mib 20 --blob  # through Azurite (installed on demand)
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _store(spec: str) -> Any:
    kind, _, where = spec.partition("=")
    limit = 200 * 1024 * 1024  # the default limit is 10 MiB
    if kind == "dir":
        from durabletask.payload import FilePayloadStore, FilePayloadStoreOptions

        return FilePayloadStore(FilePayloadStoreOptions(directory=where, max_stored_payload_bytes=limit))
    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

    return BlobPayloadStore(BlobPayloadStoreOptions(connection_string=where, max_stored_payload_bytes=limit))


def payload(mib: int) -> str:
    # Base64 of random bytes: text that gzip cannot shrink much, so compression does not flatter the figure.
    rng = random.Random(7)
    return base64.b64encode(rng.randbytes(mib * 1024 * 1024 * 3 // 4)).decode()[: mib * 1024 * 1024]


def run_worker(address: str, store_spec: str) -> None:
    from durabletask import task, worker

    def same(ctx: task.ActivityContext, value: str) -> str:
        return value

    def relay(ctx: task.OrchestrationContext, _: Any) -> Any:
        value = yield ctx.wait_for_external_event("payload")
        result = yield ctx.call_activity(same, input=value)
        return result

    with worker.TaskHubGrpcWorker(host_address=address, payload_store=_store(store_spec)) as w:
        w.add_orchestrator(relay)
        w.add_activity(same)
        baseline = _rss_mib()
        w.start()
        print("ready", flush=True)
        sys.stdin.read()
    print(json.dumps({"baseline": baseline, "peak": _peak_mib()}), flush=True)


def run_client(address: str, store_spec: str, mib: int) -> None:
    from durabletask import client

    value = payload(mib)
    c = client.TaskHubGrpcClient(host_address=address, payload_store=_store(store_spec))
    baseline = _rss_mib()
    started = time.perf_counter()
    iid = c.schedule_new_orchestration("relay")
    c.raise_orchestration_event(iid, "payload", data=value)
    state = c.wait_for_orchestration_completion(iid, timeout=600)
    assert state is not None and state.runtime_status.name == "COMPLETED", state
    ok = state.get_output() == value
    seconds = time.perf_counter() - started
    print(json.dumps({"baseline": baseline, "peak": _peak_mib(), "ok": ok, "seconds": seconds}), flush=True)


def walk_cost() -> float:
    """Milliseconds to look for tokens in a work item of 1,000 small history events (the cost on every item)."""
    from google.protobuf import timestamp_pb2

    from durabletask._proto import orchestrator_service_pb2 as pb
    from durabletask.payload import FilePayloadStore, deexternalize_payloads

    events = []
    for i in range(1000):
        event = pb.HistoryEvent(eventId=i, timestamp=timestamp_pb2.Timestamp(seconds=i),
                                taskCompleted=pb.TaskCompletedEvent(taskScheduledId=i))
        event.taskCompleted.result.value = f'"result {i}"'
        events.append(event)
    request = pb.OrchestratorRequest(instanceId="walk", pastEvents=events)
    with tempfile.TemporaryDirectory() as folder:
        store = FilePayloadStore(folder)
        best = float("inf")
        for _ in range(10):
            started = time.perf_counter()
            deexternalize_payloads(request, store)
            best = min(best, time.perf_counter() - started)
    return best * 1000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=50)
    parser.add_argument("--blob", action="store_true", help="use Azurite instead of a folder store")
    parser.add_argument("--role", choices=["worker", "client"], help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "worker":
        run_worker(args.address, args.store)
        return
    if args.role == "client":
        run_client(args.address, args.store, args.mib)
        return

    print(f"looking for tokens in a 1,000-event work item: {walk_cost():.1f} ms (best of 10)")
    azurite = None
    with tempfile.TemporaryDirectory() as folder:
        if args.blob:
            from tests.support.azurite import Azurite

            azurite = Azurite()
            spec = f"blob={azurite.connection_string}"
        else:
            spec = f"dir={folder}"
        port = _free_port()
        address = f"localhost:{port}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        emulator = subprocess.Popen([sys.executable, "-m", "dtscale_emulator", "--port", str(port), "--in-memory",
                                     "--log-level", "WARNING"], env=env)
        me = [sys.executable, __file__, "--address", address, "--store", spec, "--mib", str(args.mib)]
        try:
            time.sleep(1.5)
            worker = subprocess.Popen([*me, "--role", "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, env=env, stderr=subprocess.DEVNULL)
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
            done = subprocess.run([*me, "--role", "client"], capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"the client failed:\n{done.stderr[-3000:]}")
            client_figures = json.loads(done.stdout.strip().splitlines()[-1])
            out, _ = worker.communicate("", timeout=60)
            worker_figures = json.loads(out.strip().splitlines()[-1])
        finally:
            emulator.terminate()
            emulator.wait()
            if azurite is not None:
                azurite.stop()
    size = args.mib
    print(f"{size} MiB payload through {'Azurite' if args.blob else 'a folder store'}: "
          f"round trip {client_figures['seconds']:.1f}s, output equal to input: {client_figures['ok']}")
    for name, f in (("client", client_figures), ("worker", worker_figures)):
        extra = f["peak"] - f["baseline"]
        print(f"  {name}: peak {f['peak']:.0f} MiB, {extra:.0f} MiB above baseline = {extra / size:.2f}x the payload")


if __name__ == "__main__":
    main()
