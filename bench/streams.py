"""Durable streams on the embedded emulator: publish-to-delivery latency, throughput of one activity, CPU per item.

    .venv/bin/python bench/streams.py [--items 200] [--rate 50] [--burst 5000] [--instances 10]
        [--sustained-rate 5000] [--sustained-seconds 10] [--orchestrator-items 0] [--poll]
        [--db FILE [--durability full|normal]] [--separate]

Latency: activities publish ``--items`` items at ``--rate`` per second each, on ``--instances`` instances at once,
each with one subscriber already waiting; an item's latency is its arrival at the subscriber minus the wall-clock
time of its ``publish`` (both in this process). Throughput: one activity publishes ``--burst`` small items as fast
as it can; the figure is items delivered per second from its first publish to the last delivery. Sustained: one
activity publishes ``--sustained-rate`` items per second for ``--sustained-seconds``, with one subscriber checking
that all arrive in order, and the latency of each. CPU: this whole process (emulator, worker and subscribers share
it) per 1,000 items delivered. With ``--separate`` the emulator runs in a process of its own, as users run it, and
its figure is that process's CPU.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dtscale_emulator.dispatch import entity_waits
from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker


def paced(ctx: task.ActivityContext, spec: dict[str, Any]) -> int:
    interval = 1.0 / spec["rate"]
    for i in range(spec["items"]):
        ctx.publish({"i": i, "sent": time.time()})
        time.sleep(interval)
    return spec["items"]


def sustained(ctx: task.ActivityContext, spec: dict[str, Any]) -> int:
    """``rate`` items per second for ``seconds``, published in 10 ms slices (each item says when it was sent)."""
    per_slice = max(1, spec["rate"] // 100)
    total = spec["rate"] * spec["seconds"]
    start = time.monotonic()
    for i in range(total):
        if i % per_slice == 0:
            time.sleep(max(0.0, start + i / spec["rate"] - time.monotonic()))
        ctx.publish([i, time.time()])
    return total


def burst(ctx: task.ActivityContext, count: int) -> int:
    for i in range(count):
        ctx.publish(i)
    return count


def ticker(ctx: task.OrchestrationContext, count: int) -> int:
    """Publishes one item per turn, a turn every 20 ms (a timer between them)."""
    for i in range(count):
        ctx.publish(i)
        yield ctx.create_timer(ctx.current_utc_datetime + timedelta(milliseconds=20))
    return count


def run_one(ctx: task.OrchestrationContext, spec: dict[str, Any]) -> Any:
    return (yield ctx.call_activity(spec["activity"], input=spec["input"]))


#: The emulator's process with ``--separate`` (its CPU is then the whole process's).
_separate: subprocess.Popen[str] | None = None


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _emulator_cpu() -> float:
    """CPU seconds of the emulator's own threads (its event loop, turn, commit and admin threads) so far.

    gRPC's C-core threads are not among them: their share is in the whole process's figure only. With
    ``--separate``, the emulator process's CPU, gRPC's threads included.
    """
    if _separate is not None:
        return _process_cpu(_separate.pid)
    total = 0.0
    for thread in threading.enumerate():
        if thread.name.startswith(("dts-emulator", "emulator-")) and thread.ident is not None:
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except OSError:  # ended meanwhile
                continue
    return total


def _latency(
    c: client.TaskHubGrpcClient, instances: int, items: int, rate: int
) -> tuple[list[float], float, float, int]:
    latencies: list[float] = []
    lock = threading.Lock()
    ids = [
        c.schedule_new_orchestration(run_one, input={"activity": "paced", "input": {"items": items, "rate": rate}})
        for _ in range(instances)
    ]

    def subscribe(instance_id: str) -> None:
        for item in c.subscribe(instance_id, timeout=600):
            now = time.time()
            with lock:
                latencies.append(now - item.data["sent"])

    cpu, emulator = time.process_time(), _emulator_cpu()
    threads = [threading.Thread(target=subscribe, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.process_time() - cpu, _emulator_cpu() - emulator, len(latencies)


def _orchestrator_items(c: client.TaskHubGrpcClient, instances: int, count: int) -> list[float]:
    """Latency of orchestrator items: delivery minus the item's time (the orchestration's clock in its turn)."""
    ids = [c.schedule_new_orchestration(ticker, input=count) for _ in range(instances)]
    latencies: list[float] = []
    lock = threading.Lock()

    def subscribe(instance_id: str) -> None:
        for item in c.subscribe(instance_id, timeout=600):
            now = datetime.now(timezone.utc)
            with lock:
                latencies.append((now - item.time).total_seconds())

    threads = [threading.Thread(target=subscribe, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(latencies) == instances * count, "orchestrator items lost or repeated"
    return latencies


def _throughput(c: client.TaskHubGrpcClient, count: int) -> tuple[float, int]:
    start = time.monotonic()
    instance_id = c.schedule_new_orchestration(run_one, input={"activity": "burst", "input": count})
    received = [item.data for item in c.subscribe(instance_id, timeout=600)]
    elapsed = time.monotonic() - start
    assert received == list(range(count)), "items lost, repeated or out of order"
    return count / elapsed, len(received)


def _sustained(c: client.TaskHubGrpcClient, rate: int, seconds: int) -> tuple[list[float], float, float, int]:
    instance_id = c.schedule_new_orchestration(
        run_one, input={"activity": "sustained", "input": {"rate": rate, "seconds": seconds}}
    )
    latencies: list[float] = []
    numbers: list[int] = []
    cpu, emulator = time.process_time(), _emulator_cpu()
    for item in c.subscribe(instance_id, timeout=600):
        latencies.append(time.time() - item.data[1])
        numbers.append(item.data[0])
    assert numbers == list(range(rate * seconds)), "items lost, repeated or out of order"
    return latencies, time.process_time() - cpu, _emulator_cpu() - emulator, len(numbers)


def _cpu_text(cpu: float, emulator_cpu: float, delivered: int) -> str:
    per = 1000 / delivered
    return f"CPU per 1,000 items: process {cpu * per:.2f} s, emulator {emulator_cpu * per:.2f} s"


def _start_emulator(args: argparse.Namespace) -> tuple[int, Any]:
    """The emulator's port and how to stop it: in this process, or (``--separate``) in its own."""
    global _separate
    if not args.separate:
        server = EmulatorServer(port=0, db_path=args.db, in_memory=args.db is None, durability=args.durability)
        server.start()
        return server.port, server.stop
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = ["--db", args.db, "--durability", args.durability] if args.db else ["--in-memory"]
    _separate = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--port", str(port), *store, "--no-dashboard"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert _separate.stdout is not None and "listening" in _separate.stdout.readline()
    process = _separate

    def stop() -> None:
        process.terminate()
        process.wait(timeout=30)

    return port, stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--rate", type=int, default=50)
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--burst", type=int, default=5000)
    parser.add_argument("--sustained-rate", type=int, default=5000)
    parser.add_argument("--sustained-seconds", type=int, default=10)
    parser.add_argument("--orchestrator-items", type=int, default=0, help="items per orchestrator, one per turn")
    parser.add_argument("--db", help="a SQLite file for the emulator (default: in memory)")
    parser.add_argument("--durability", default="full", choices=["full", "normal"], help="with --db")
    parser.add_argument(
        "--poll",
        action="store_true",
        help="the emulator answers every read at once, as a backend without held reads: subscribers poll",
    )
    parser.add_argument(
        "--separate",
        action="store_true",
        help="run the emulator in a process of its own (`python -m dtscale_emulator`), as users run it",
    )
    args = parser.parse_args()
    if args.poll and args.separate:
        parser.error("--poll steers the emulator in this process; it cannot be combined with --separate")
    if args.poll:
        entity_waits.MAX_WAITERS = 0  # past the cap (here: always) reads are answered unheld
    port, stop = _start_emulator(args)
    w = worker.TaskHubGrpcWorker(host_address=f"localhost:{port}")
    w.add_orchestrator(run_one)
    w.add_orchestrator(ticker)
    w.add_activity(paced)
    w.add_activity(burst)
    w.add_activity(sustained)
    w.start()
    c = client.TaskHubGrpcClient(host_address=f"localhost:{port}")
    try:
        latencies, cpu, emulator_cpu, delivered = _latency(c, args.instances, args.items, args.rate)
        cut = statistics.quantiles(latencies, n=100)
        print(f"latency, {args.instances} instances x {args.items} items at {args.rate}/s each, one subscriber each:")
        print(f"  delivered {delivered} of {args.instances * args.items}")
        print(f"  p50 {cut[49] * 1000:.1f} ms   p99 {cut[98] * 1000:.1f} ms   max {max(latencies) * 1000:.1f} ms")
        print(f"  {_cpu_text(cpu, emulator_cpu, delivered)}")
        if args.orchestrator_items > 0:
            latencies = _orchestrator_items(c, args.instances, args.orchestrator_items)
            cut = statistics.quantiles(latencies, n=100)
            print(
                f"orchestrator items, {args.instances} instances x {args.orchestrator_items} (a turn every 20 ms): "
                f"p50 {cut[49] * 1000:.1f} ms, p99 {cut[98] * 1000:.1f} ms from the turn's clock to delivery"
            )
        rate, count = _throughput(c, args.burst)
        print(f"throughput, one activity publishing {count} small items: {rate:,.0f} items/s delivered in order")
        if args.sustained_seconds > 0:
            latencies, cpu, emulator_cpu, delivered = _sustained(c, args.sustained_rate, args.sustained_seconds)
            cut = statistics.quantiles(latencies, n=100)
            print(
                f"sustained, one activity publishing {args.sustained_rate}/s for {args.sustained_seconds} s: "
                f"{delivered} delivered in order, p50 {cut[49] * 1000:.1f} ms, p99 {cut[98] * 1000:.1f} ms, "
                f"{_cpu_text(cpu, emulator_cpu, delivered)}"
            )
    finally:
        c.close()
        w.stop()
        stop()


if __name__ == "__main__":
    main()
