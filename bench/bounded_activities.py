"""Costs of bounded activities (prints, never asserts): CPU and history per heartbeat, cancel latency, load.

All on the emulator started in this process (in memory) with one worker in this process:

1. CPU per ``ctx.heartbeat()`` call (throttled: almost every call only records the details).
2. History per heartbeat sent: an activity heartbeating for a few seconds with ``heartbeat_timeout=1s``; events and
   orchestration turns per heartbeat that reached the orchestration.
3. Latency from the client's ``cancel`` event (the orchestration then calls ``t.cancel()``) to the activity seeing
   ``ActivityCancelledError`` at a heartbeat, p50 and p99.
4. N async activities heartbeating at once (``--heartbeat-timeout``, 30 s by default, for ``--run-seconds``): the
   emulator in a process of its own, the worker in this one, and StartInstance latency measured meanwhile from a
   third process (p50, p99 of 100 starts), so the figure is the emulator's, not this process's; the emulator's CPU
   over the run; heartbeats sent by the worker against heartbeat events in the histories (none lost, none twice).

Usage: .venv/bin/python bench/bounded_activities.py [--cancels 100] [--heartbeaters 1000] [--heartbeat-timeout 30]
       [--run-seconds 60] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dtscale_emulator.server import EmulatorServer  # noqa: E402
from durabletask import client, task, worker  # noqa: E402
from durabletask._codec import Codec  # noqa: E402
from durabletask._proto import orchestrator_service_pb2 as pb  # noqa: E402
from durabletask._replay.activity_control import CONTROL_EVENT, CONTROL_TAG, AttemptSettings  # noqa: E402
from durabletask._worker.heartbeats import AttemptHeartbeats  # noqa: E402
from durabletask.worker import ConcurrencyOptions  # noqa: E402
from tests.support.reliability import env, fetch_history, free_port  # noqa: E402

_seen: dict[str, float] = {}
_phase = random.Random(40)
_sends: list[int] = []


def cpu_per_call(calls: int = 1_000_000) -> float:
    request = pb.ActivityRequest(name="a", taskId=1, orchestrationInstance=pb.OrchestrationInstance(instanceId="i"))
    request.tags[CONTROL_TAG] = AttemptSettings(1, "i", 24.0, 1.0, True, None).to_tag()
    beats = AttemptHeartbeats(request, Codec())
    started = time.process_time()
    for page in range(calls):
        beats.beat({"page": page})
    return (time.process_time() - started) / calls * 1e6


def steady(ctx: task.ActivityContext, seconds: float) -> int:
    deadline, page = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        ctx.heartbeat(page)
        page += 1
        time.sleep(0.01)
    return page


def steady_pipeline(ctx: task.OrchestrationContext, seconds: float) -> Any:
    return (yield ctx.call_activity(steady, input=seconds, heartbeat_timeout=timedelta(seconds=1)))


def looping(ctx: task.ActivityContext, _: Any) -> None:
    try:
        for page in range(10_000_000):
            ctx.heartbeat(page)
            time.sleep(0.005)
    except task.ActivityCancelledError:
        _seen[ctx.orchestration_id] = time.perf_counter()
        raise


def cancelled_pipeline(ctx: task.OrchestrationContext, _: Any) -> Any:
    t = ctx.call_activity(looping, heartbeat_timeout=timedelta(seconds=30))
    yield ctx.wait_for_external_event("cancel")
    t.cancel()
    return "cancelled"


_running: set[str] = set()


async def beating(ctx: task.ActivityContext, plan: dict[str, float]) -> int:
    _running.add(ctx.orchestration_id)
    deadline, page = time.monotonic() + plan["seconds"], 0
    try:
        while time.monotonic() < deadline:
            ctx.heartbeat(page)
            page += 1
            await asyncio.sleep(0.05)
    finally:  # also when the attempt was stopped (timed out): its sends count all the same
        _sends.append(getattr(ctx._heartbeats, "sends", 0))
    return page


def beating_pipeline(ctx: task.OrchestrationContext, plan: dict[str, float]) -> Any:
    timeout = timedelta(seconds=plan["heartbeat_timeout"])
    return (yield ctx.call_activity(beating, input=plan, heartbeat_timeout=timeout))


def history_per_beat(c: client.TaskHubGrpcClient, address: str, hub: str) -> dict[str, float]:
    iid = c.schedule_new_orchestration(steady_pipeline, input=5.0)
    c.wait_for_orchestration_completion(iid, timeout=120)
    events = fetch_history(address, iid, hub)
    beats = sum(
        1
        for e in events
        if e.HasField("eventRaised") and e.eventRaised.name == CONTROL_EVENT and '"beat"' in e.eventRaised.input.value
    )
    turns = sum(1 for e in events if e.HasField("orchestratorStarted"))
    return {
        "beats": beats,
        "events": len(events),
        "turns": turns,
        "events_per_beat": round(len(events) / beats, 2),
        "turns_per_beat": round(turns / beats, 2),
    }


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (p99 of 100 values: the 99th smallest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * share) - 1)]


def cancel_latency(c: client.TaskHubGrpcClient, runs: int) -> dict[str, float]:
    waits: list[float] = []
    for _ in range(runs):
        iid = c.schedule_new_orchestration(cancelled_pipeline, instance_id=f"cancel-{uuid.uuid4().hex[:8]}")
        c.wait_for_orchestration_start(iid, timeout=60)
        # The activity runs and heartbeats; a random extra wait puts the cancel at any point of the worker's
        # once-a-second look (runs started back to back would otherwise all fall at a similar point of it).
        time.sleep(0.3 + _phase.random())
        sent = time.perf_counter()
        c.raise_orchestration_event(iid, "cancel")
        deadline = time.monotonic() + 60
        while iid not in _seen and time.monotonic() < deadline:
            time.sleep(0.005)
        waits.append((_seen[iid] - sent) * 1000)
        c.wait_for_orchestration_completion(iid, timeout=60)
    return {
        "runs": runs,
        "p50_ms": round(statistics.median(waits), 1),
        "p99_ms": round(percentile(waits, 0.99), 1),
        "max_ms": round(max(waits), 1),
    }


def probe(address: str, count: int) -> None:
    """(In a process of its own) ``count`` StartInstance calls 0.2 s apart; prints their latencies in ms."""
    c = client.TaskHubGrpcClient(host_address=address)
    c.schedule_new_orchestration("nobody_runs_this")  # the channel is up before the first measured call
    starts: list[float] = []
    for _ in range(count):
        began = time.perf_counter()
        c.schedule_new_orchestration("nobody_runs_this", instance_id=f"probe-{uuid.uuid4().hex[:10]}")
        starts.append((time.perf_counter() - began) * 1000)
        time.sleep(0.2)
    c.close()
    print(json.dumps(starts))


def probe_from_elsewhere(address: str) -> list[float]:
    probing = subprocess.run(
        [sys.executable, __file__, "--probe", address],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return [float(x) for x in json.loads(probing.stdout)]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def many(count: int, heartbeat_timeout: float, seconds: float) -> dict[str, Any]:
    port = free_port()
    emulator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dtscale_emulator",
            "--in-memory",
            "--dynamic-task-hubs",
            "--no-dashboard",
            "--port",
            str(port),
            "--log-level",
            "WARNING",
        ],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert emulator.stdout is not None and "listening on" in emulator.stdout.readline()
    address = f"localhost:{port}"
    w = worker.TaskHubGrpcWorker(
        host_address=address, concurrency_options=ConcurrencyOptions(maximum_concurrent_activity_work_items=count + 10)
    )
    w.add_orchestrator(beating_pipeline)
    w.add_activity(beating)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        idle = probe_from_elsewhere(address)  # the same emulator and machine, nothing heartbeating: the baseline
        plan = {"seconds": seconds, "heartbeat_timeout": heartbeat_timeout}
        began = time.monotonic()
        ids = [c.schedule_new_orchestration(beating_pipeline, input=plan) for _ in range(count)]
        while len(_running) < count and time.monotonic() - began < 300:
            time.sleep(0.1)
        all_running = round(time.monotonic() - began, 1)
        time.sleep(3.0)  # past the burst of starts: the steady state of heartbeats and checks
        cpu_before, wall_before = cpu_seconds(emulator.pid), time.monotonic()
        starts = probe_from_elsewhere(address)
        emulator_cpu = (cpu_seconds(emulator.pid) - cpu_before) / (time.monotonic() - wall_before)
        load = os.getloadavg()
        still_running = len(_sends) < count
        states = [c.wait_for_orchestration_completion(iid, timeout=600) for iid in ids]
        completed = sum(1 for s in states if s is not None and s.runtime_status == client.OrchestrationStatus.COMPLETED)
        failures: dict[str, int] = {}
        for state in states:
            if state is not None and state.failure_details is not None:
                message = state.failure_details.message
                reason = (
                    message.split("timed out: ", 1)[1].split(" timeout", 1)[0] if "timed out: " in message else message
                )
                failures[reason] = failures.get(reason, 0) + 1
        ended = time.monotonic() + 30
        while len(_sends) < count and time.monotonic() < ended:  # stopped attempts see the stop at a heartbeat
            time.sleep(0.1)
        received = sum(
            1
            for iid in ids
            for e in fetch_history(address, iid, "default")
            if e.HasField("eventRaised")
            and e.eventRaised.name == CONTROL_EVENT
            and '"beat"' in e.eventRaised.input.value
        )
        return {
            "heartbeaters": count,
            "heartbeat_timeout_s": heartbeat_timeout,
            "activity_seconds": seconds,
            "all_running_after_s": all_running,
            "probes_during_run": still_running,
            "start_p50_ms": round(statistics.median(starts), 2),
            "start_p99_ms": round(percentile(starts, 0.99), 2),
            "start_max_ms": round(max(starts), 2),
            "idle_start_p50_ms": round(statistics.median(idle), 2),
            "idle_start_p99_ms": round(percentile(idle, 0.99), 2),
            "emulator_cpu_share": round(emulator_cpu, 2),
            "loadavg": [round(x, 2) for x in load],
            "completed": completed,
            "failed_by": failures,
            "heartbeats_sent": sum(_sends),
            "heartbeats_in_histories": received,
        }
    finally:
        threading.Thread(target=w.stop).start()
        c.close()
        emulator.terminate()
        emulator.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cancels", type=int, default=100)
    parser.add_argument("--heartbeaters", type=int, default=1000)
    parser.add_argument("--heartbeat-timeout", type=float, default=30.0)
    parser.add_argument("--run-seconds", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--probe", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args.probe, 100)
        return
    results: dict[str, Any] = {"cpu_us_per_heartbeat_call": round(cpu_per_call(), 3)}
    if args.cancels:
        server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
        server.start()
        address, hub = f"localhost:{server.port}", "default"
        w = worker.TaskHubGrpcWorker(host_address=address)
        for fn in (steady_pipeline, cancelled_pipeline):
            w.add_orchestrator(fn)
        for act in (steady, looping):
            w.add_activity(act)
        w.start()
        c = client.TaskHubGrpcClient(host_address=address)
        results["history_per_heartbeat"] = history_per_beat(c, address, hub)
        results["cancel_to_activity"] = cancel_latency(c, args.cancels)
        results["cancel_loadavg"] = [round(x, 2) for x in os.getloadavg()]
        w.stop()
        c.close()
        server.stop()
    if args.heartbeaters:
        results["many"] = many(args.heartbeaters, args.heartbeat_timeout, args.run_seconds)
    print(json.dumps(results, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
