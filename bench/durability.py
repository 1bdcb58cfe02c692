"""What durable commits cost: starts per second and start latency, ``--durability full`` beside ``normal``.

Prints, never asserts.

Each round starts one emulator process per mode on a fresh SQLite file and sends it StartInstance calls at each
concurrency level in turn (``--clients``, default 1, 8 and 32 callers at once, each on a channel of its own and
calling back to back): one client shows the latency a synced commit adds, where nothing can share a sync; more
clients show whether commits made during one sync share the next (group commit). Rounds alternate the modes
(full, normal, full, normal...) so both meet the same load on a shared machine; the table gives each mode's
median over the rounds, the ratio of the medians, and the median of the rounds' own ratios.

``full`` (the default) answers a call once the write-ahead log holding its commit is synced (one sync for all the
commits made while the previous one ran); ``normal`` syncs the log only at checkpoints. The cost of a sync
depends on the disk: the script also times a bare ``write + fsync`` of one 4 KiB page appended in the same
folder (a sync that also grows the file, so dearer than the log's in-place writes). Where ``/proc`` exists, it also
gives the emulator's own CPU time (user and system) per start: what the syncing costs besides waiting, which on a
machine with few cores bounds the throughput.

Usage: .venv/bin/python bench/durability.py [--starts 2000] [--clients 1,8,32] [--rounds 3] [--dir PATH] [--json]
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


def _cpu_seconds(pid: int) -> float | None:
    """The user and system CPU time of process ``pid`` so far (Linux's ``/proc``; ``None`` elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load(address: str, starts: int, clients: int) -> dict[str, float]:
    """Starts per second and start latency with ``clients`` callers at once, each on a channel of its own."""
    each = max(1, starts // clients)
    barrier = threading.Barrier(clients + 1)
    latencies: list[list[float]] = [[] for _ in range(clients)]

    def client(n: int) -> None:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            for _ in range(max(1, 20 // clients)):  # connection and first statements
                _start(stub)
            barrier.wait()
            latencies[n] = [_start(stub) for _ in range(each)]

    workers = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for w in workers:
        w.start()
    barrier.wait()
    began = time.perf_counter()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - began
    every = sorted(x for per in latencies for x in per)
    return {
        "per_second": len(every) / seconds,
        "p50_ms": every[len(every) // 2] * 1000,
        "p99_ms": every[int(len(every) * 0.99)] * 1000,
    }


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


def measure(folder: Path, starts: int, levels: list[int], rounds: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for round_ in range(rounds):
        for mode in MODES if round_ % 2 == 0 else tuple(reversed(MODES)):
            db = folder / f"{mode}-{round_}.db"
            proc, address = _emulator(db, mode)
            result: dict[str, float] = {}
            try:
                for clients in levels:
                    cpu_before = _cpu_seconds(proc.pid)
                    load = _load(address, starts, clients)
                    cpu_after = _cpu_seconds(proc.pid)
                    if cpu_before is not None and cpu_after is not None:
                        load["cpu_ms"] = (cpu_after - cpu_before) * 1000 / (max(1, starts // clients) * clients)
                    for key, value in load.items():
                        result[f"{key}@{clients}"] = value
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
    pairs = list(zip(runs["full"], runs["normal"], strict=True))
    ratios = {k: statistics.median(f[k] / n[k] for f, n in pairs) for k in runs["full"][0]}
    return {"modes": medians, "ratios": ratios, "runs": runs, "fsync_ms": _fsync_floor(folder), "load": os.getloadavg()}


def report(result: dict[str, Any], starts: int, levels: list[int]) -> None:
    full, normal, ratios = result["modes"]["full"], result["modes"]["normal"], result["ratios"]
    print(f"\n{starts} starts per level, mode and round; medians over the rounds; load {result['load'][0]:.1f}")
    print(f"{'':40} {'full (default)':>15} {'normal':>10} {'full / normal':>14} {'(per round)':>12}")
    for clients in levels:
        for label, key, fmt in (
            ("starts/s", "per_second", "{:.0f}"),
            ("p50 latency of a start (ms)", "p50_ms", "{:.2f}"),
            ("p99 latency of a start (ms)", "p99_ms", "{:.2f}"),
            ("emulator CPU per start (ms)", "cpu_ms", "{:.3f}"),
        ):
            k = f"{key}@{clients}"
            if k not in full:
                continue
            name = f"{label}, {clients} client{'s' if clients > 1 else ''}"
            print(
                f"{name:40} {fmt.format(full[k]):>15} {fmt.format(normal[k]):>10} {full[k] / normal[k]:>13.2f}x"
                f" {ratios[k]:>11.2f}x"
            )
    print(f"write + fsync of one 4 KiB page in the same folder: {result['fsync_ms']:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=2000)
    parser.add_argument("--clients", default="1,8,32", help="concurrency levels, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", help="folder for the stores (default: a temporary one); the disk is what is measured")
    parser.add_argument("--json", action="store_true", help="print the result as JSON too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        levels = [int(c) for c in args.clients.split(",")]
        result = measure(Path(folder), args.starts, levels, args.rounds)
    report(result, args.starts, levels)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
