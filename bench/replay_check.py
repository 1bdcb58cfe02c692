"""Replay-check throughput: recorded histories checked per second (prints, never asserts).

Records real histories first: an in-process emulator and worker run ``--instances`` orchestrations of an order
workflow (``--steps`` activities, then a durable timer each instance is left waiting on, the common shape of a
running instance at deploy time), and the client fetches their histories. Those are then checked, repeated up to
``--histories``:
  replays     the code that recorded them (every history replays cleanly: the fast path)
  compatible  a compatible change (an activity's input changed)
  diverges    a step inserted before the timer (every history diverges: each one is replayed a second time,
              closely watched, to find the call's source line)
  files       the same histories written as export files (JSON lines, gzip) and read back by the check
Times are best of ``--repeat`` passes; histories/s counts histories checked per second of the check alone
(reading files included for ``files``), by wall time and by the process's CPU time.

Usage: .venv/bin/python bench/replay_check.py [--instances 100] [--steps 10] [--histories 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from durabletask import client, task, worker
from durabletask.extensions.history_export.models import ExportFormat
from durabletask.extensions.history_export.serialization import serialize_history
from durabletask.testing import OrchestrationHistory, ReplayChecker, create_test_backend, histories_from_files


def step(ctx: task.ActivityContext, n: int) -> int:
    return n + 1


def make_order(steps: int, *, extra: bool = False, scale: int = 1) -> Callable[..., Any]:
    def order(ctx: task.OrchestrationContext, _: Any) -> Any:
        total = 0
        for i in range(steps):
            total = yield ctx.call_activity(step, input=i * scale)
        if extra:
            yield ctx.call_activity(step, input=-1)  # inserted before the wait
        ctx.set_custom_status("waiting")
        yield ctx.create_timer(timedelta(days=1))
        return total

    return order


def record(instances: int, steps: int) -> list[OrchestrationHistory]:
    backend = create_test_backend(port=0)
    w = worker.TaskHubGrpcWorker(host_address=backend.address)
    w.add_orchestrator(make_order(steps), name="order")
    w.add_activity(step)
    w.start()
    c = client.TaskHubGrpcClient(host_address=backend.address)
    try:
        ids = [c.schedule_new_orchestration("order", instance_id=f"bench-{i}") for i in range(instances)]
        deadline = time.monotonic() + 300
        for iid in ids:
            while c.get_orchestration_state(iid).serialized_custom_status != '"waiting"':
                if time.monotonic() > deadline:
                    raise SystemExit(f"{iid} did not reach its timer")
                time.sleep(0.01)
        return [OrchestrationHistory(iid, c.get_orchestration_history(iid), "bench") for iid in ids]
    finally:
        c.close()
        w.stop()
        backend.stop()


def best(repeat: int, run: Callable[[], int]) -> tuple[float, float, int]:
    """The best wall and CPU seconds of ``repeat`` runs (CPU time is the figure a loaded machine moves least)."""
    walls, cpus, count = [], [], 0
    for _ in range(repeat):
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        count = run()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), count


def show(label: str, wall: float, cpu: float, count: int, note: str = "") -> None:
    print(
        f"{label:<11} {count / wall:>7,.0f} histories/s ({wall:.2f} s wall for {count}{note}), "
        f"{count / cpu:>7,.0f} per CPU second"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--histories", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    recorded = record(args.instances, args.steps)
    histories = [recorded[i % len(recorded)] for i in range(args.histories)]
    events = sum(len(h.events) for h in histories) / len(histories)
    print(f"{len(histories)} histories of {events:.0f} events each ({args.steps} activities, then a timer)")
    rows = {
        "replays": (make_order(args.steps), True),
        "compatible": (make_order(args.steps, scale=2), True),
        "diverges": (make_order(args.steps, extra=True), False),
    }

    def fresh() -> list[OrchestrationHistory]:
        # New objects each pass: a history keeps its events converted for replay once they have been.
        return [OrchestrationHistory(h.instance_id, h.events, h.source) for h in histories]

    for label, (code, ok) in rows.items():
        checker = ReplayChecker({"order": code})
        wall, cpu, count = best(args.repeat, lambda c=checker: len(c.check(fresh()).results))
        report = checker.check(histories[:10])
        assert report.ok is ok, report.summary()
        show(label, wall, cpu, count)
    with tempfile.TemporaryDirectory() as folder:
        for i, h in enumerate(histories):
            data = serialize_history(h.events, instance_id=f"{h.instance_id}-{i}", fmt=ExportFormat())
            (Path(folder) / f"{i}.jsonl.gz").write_bytes(data)
        checker = ReplayChecker({"order": make_order(args.steps)})
        wall, cpu, count = best(args.repeat, lambda: len(checker.check(histories_from_files([folder])).results))
        show("files", wall, cpu, count, ", read included")


if __name__ == "__main__":
    main()
