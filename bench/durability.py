"""What durable commits cost: starts per second and start latency, ``--durability full`` beside ``normal``.

Prints, never asserts.

Each round starts one emulator process per mode on a fresh SQLite file and sends it StartInstance calls: first
one client calling back to back (each start is one committed transaction, so this is the latency of a commit),
then several client threads at once (the emulator commits one transaction at a time, so the threads show
whether the sync per commit limits throughput). Rounds alternate the modes (full, normal, full, normal...) so both
meet the same load on a shared machine; the table gives each mode's median over the rounds and the ratio.

``full`` (the default) syncs the write-ahead log at every commit; ``normal`` syncs it only at checkpoints. The
cost of ``full`` is one fsync per commit, so it depends on the disk: the script also times a bare
``write + fsync`` of one 4 KiB page in the same folder, as the floor of what a synced commit can cost there.

Usage: .venv/bin/python bench/durability.py [--starts 2000] [--threads 8] [--rounds 3] [--dir PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
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

from durabletask._proto import orchestrator_service_pb2 as pb  # noqa: E402
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc  # noqa: E402

MODES = ("full", "normal")
META = [("taskhub", "default")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _emulator(db: Path, mode: str) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--db", str(db), "--port", str(port), "--durability", mode,
         "--no-dashboard", "--log-level", "WARNING"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"the emulator did not start: {line!r}")
    return proc, f"127.0.0.1:{port}"


def _start(stub: pb_grpc.TaskHubSidecarServiceStub) -> float:
    request = pb.CreateInstanceRequest(instanceId=uuid.uuid4().hex, name="Orch")
    began = time.perf_counter()
    stub.StartInstance(request, metadata=META, timeout=30)
    return time.perf_counter() - began


def _sequential(address: str, starts: int) -> dict[str, float]:
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        for _ in range(20):  # connection and first statements
            _start(stub)
        began = time.perf_counter()
        latencies = sorted(_start(stub) for _ in range(starts))
        seconds = time.perf_counter() - began
    return {
        "per_second": starts / seconds,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
    }


def _concurrent(address: str, starts: int, threads: int) -> float:
    """Starts per second with ``threads`` clients calling at once, each on a channel of its own."""
    each = max(1, starts // threads)
    barrier = threading.Barrier(threads + 1)

    def client() -> None:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            _start(stub)
            barrier.wait()
            for _ in range(each):
                _start(stub)

    workers = [threading.Thread(target=client) for _ in range(threads)]
    for w in workers:
        w.start()
    barrier.wait()
    began = time.perf_counter()
    for w in workers:
        w.join()
    return each * threads / (time.perf_counter() - began)


def _fsync_floor(folder: Path, count: int = 200) -> float:
    """Milliseconds of one 4 KiB append and fsync in ``folder``: what the disk charges a synced commit at least."""
    path = folder / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        began = time.perf_counter()
        for _ in range(count):
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        return (time.perf_counter() - began) / count * 1000
    finally:
        os.close(fd)
        path.unlink()


def measure(folder: Path, starts: int, threads: int, rounds: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for round_ in range(rounds):
        for mode in MODES if round_ % 2 == 0 else tuple(reversed(MODES)):
            db = folder / f"{mode}-{round_}.db"
            proc, address = _emulator(db, mode)
            try:
                result = _sequential(address, starts)
                result["concurrent_per_second"] = _concurrent(address, starts, threads)
            finally:
                proc.terminate()
                proc.wait(30)
                if proc.stdout is not None:
                    proc.stdout.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            runs[mode].append(result)
            print(f"  round {round_ + 1} {mode:6}: " + ", ".join(f"{k} {v:.2f}" for k, v in result.items()), flush=True)
    medians = {mode: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for mode, rs in runs.items()}
    return {"modes": medians, "runs": runs, "fsync_ms": _fsync_floor(folder), "load": os.getloadavg()}


def report(result: dict[str, Any], starts: int, threads: int) -> None:
    full, normal = result["modes"]["full"], result["modes"]["normal"]
    rows = [
        ("starts/s, one client", "per_second", "{:.0f}"),
        ("p50 latency of a start (ms)", "p50_ms", "{:.2f}"),
        ("p99 latency of a start (ms)", "p99_ms", "{:.2f}"),
        (f"starts/s, {threads} clients", "concurrent_per_second", "{:.0f}"),
    ]
    print(f"\n{starts} starts per mode and round; medians over the rounds; load {result['load'][0]:.1f}")
    print(f"{'':32} {'full (default)':>15} {'normal':>10} {'full / normal':>14}")
    for label, key, fmt in rows:
        print(f"{label:32} {fmt.format(full[key]):>15} {fmt.format(normal[key]):>10} {full[key] / normal[key]:>13.2f}x")
    print(f"write + fsync of one 4 KiB page in the same folder: {result['fsync_ms']:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", help="folder for the stores (default: a temporary one); the disk is what is measured")
    parser.add_argument("--json", action="store_true", help="print the result as JSON too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        result = measure(Path(folder), args.starts, args.threads, args.rounds)
    report(result, args.starts, args.threads)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
