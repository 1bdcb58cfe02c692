"""How late each timeout of a bounded activity takes effect on the emulator (prints, never asserts).

Issue 40 asks that each timeout fire within its value plus 1 s. For each kind, ``--count`` orchestrations at once
each make one call bounded by that timeout alone (``--seconds``), which then expires; the orchestration returns at
once when it catches ``ActivityTimeoutError``. Lateness is the orchestration's completion time minus the moment
the timeout was due, both read from the emulator's clock:

- ``start_to_close``: the attempt's start report (its event in the history) + the timeout; the activity sleeps;
- ``heartbeat``: the last heartbeat's event + the timeout; the activity heartbeats once, then sleeps;
- ``schedule_to_start``: the task's scheduling event + the timeout; no worker serves the activity;
- ``schedule_to_close``: the task's scheduling event + the timeout; the activity sleeps.

The emulator runs in a process of its own (in memory, or ``--db FILE``), the worker in this one, with work-item
filters so that no worker takes the activity nobody serves.

Usage: .venv/bin/python bench/timeout_precision.py [--count 20] [--seconds 2] [--db FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from durabletask import client, history, task, worker  # noqa: E402
from durabletask._replay.activity_control import CONTROL_EVENT  # noqa: E402
from tests.support.reliability import free_port  # noqa: E402

KINDS = ("start_to_close", "heartbeat", "schedule_to_start", "schedule_to_close")
SLEEP = 8.0


def sleepy(ctx: task.ActivityContext, heartbeat_once: bool) -> str:
    if heartbeat_once:
        ctx.heartbeat("once")
    deadline = time.monotonic() + SLEEP
    while time.monotonic() < deadline and not ctx.is_cancellation_requested:
        time.sleep(0.05)
    return "slept"


def bounded(ctx: task.OrchestrationContext, plan: dict[str, Any]) -> Any:
    kind, seconds = plan["kind"], timedelta(seconds=plan["seconds"])
    activity = "nobody_serves_this" if kind == "schedule_to_start" else "sleepy"
    try:
        yield ctx.call_activity(activity, input=kind == "heartbeat", **{f"{kind}_timeout": seconds})
    except task.ActivityTimeoutError as error:
        return error.timeout_type
    return "no timeout"


def _reference(events: list[history.HistoryEvent], kind: str) -> Any:
    """When the timeout's clock started, as the history records it."""
    if kind in ("schedule_to_start", "schedule_to_close"):
        return next(e.timestamp for e in events if isinstance(e, history.TaskScheduledEvent))
    wanted = "start" if kind == "start_to_close" else "beat"
    found = None
    for event in events:
        is_control = isinstance(event, history.EventRaisedEvent) and event.name == CONTROL_EVENT
        if is_control and json.loads(event.input or "{}").get("kind") == wanted:
            found = event.timestamp
    return found


def measure(c: client.TaskHubGrpcClient, kind: str, count: int, seconds: float) -> list[float]:
    ids = [
        c.schedule_new_orchestration(
            bounded, input={"kind": kind, "seconds": seconds}, instance_id=f"{kind}-{uuid.uuid4().hex[:8]}"
        )
        for _ in range(count)
    ]
    late: list[float] = []
    for instance_id in ids:
        state = c.wait_for_orchestration_completion(instance_id, timeout=120)
        assert state is not None and json.loads(state.serialized_output or "null") == kind, state
        reference = _reference(c.get_orchestration_history(instance_id), kind)
        due = reference.timestamp() + seconds
        late.append(state.last_updated_at.timestamp() - due)
    return late


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--db", default=None, help="a file store (with the default durability) instead of memory")
    args = parser.parse_args()
    port = free_port()
    store = ["--db", args.db] if args.db else ["--in-memory"]
    emulator = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--port", str(port), *store, "--no-dashboard"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert emulator.stdout is not None and "listening" in emulator.stdout.readline()
        address = f"localhost:{port}"
        w = worker.TaskHubGrpcWorker(host_address=address)
        w.add_orchestrator(bounded)
        w.add_activity(sleepy)
        w.use_work_item_filters()  # so that nobody takes the activity of the schedule_to_start calls
        w.start()
        with client.TaskHubGrpcClient(host_address=address) as c:
            print(f"load average at the start: {os.getloadavg()}")
            print(f"{args.count} calls per kind at once, each timeout {args.seconds:g} s; lateness in ms")
            print("| timeout | p50 | max | within 1 s |")
            print("| --- | ---: | ---: | ---: |")
            for kind in KINDS:
                late = measure(c, kind, args.count, args.seconds)
                within = sum(1 for x in late if x <= 1.0)
                p50, worst = statistics.median(late) * 1000, max(late) * 1000
                print(f"| {kind} | {p50:.0f} | {worst:.0f} | {within} of {len(late)} |")
            print(f"load average at the end: {os.getloadavg()}")
        w.stop()
    finally:
        emulator.terminate()
        emulator.wait(timeout=30)


if __name__ == "__main__":
    main()
