"""Costs of bounded activities (prints, never asserts): CPU and history per heartbeat, cancel latency, load.

All on the emulator started in this process (in memory) with one worker in this process:

1. CPU per ``ctx.heartbeat()`` call (throttled: almost every call only records the details).
2. History per heartbeat sent: an activity heartbeating for a few seconds with ``heartbeat_timeout=1s``; events and
   orchestration turns per heartbeat that reached the orchestration.
3. Latency from the client's ``cancel`` event (the orchestration then calls ``t.cancel()``) to the activity seeing
   ``ActivityCancelledError`` at a heartbeat, p50 and p99.
4. N async activities heartbeating at once (``heartbeat_timeout=2s``): StartInstance latency meanwhile (p50, p99),
   and heartbeats sent by the workers against heartbeat events in the histories.

Usage: .venv/bin/python bench/bounded_activities.py [--cancels 30] [--heartbeaters 1000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
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
from tests.support.reliability import fetch_history  # noqa: E402

_seen: dict[str, float] = {}
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


async def beating(ctx: task.ActivityContext, seconds: float) -> int:
    deadline, page = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        ctx.heartbeat(page)
        page += 1
        await asyncio.sleep(0.05)
    beats = ctx._heartbeats
    _sends.append(getattr(beats, "sends", 0))
    return page


def beating_pipeline(ctx: task.OrchestrationContext, seconds: float) -> Any:
    return (yield ctx.call_activity(beating, input=seconds, heartbeat_timeout=timedelta(seconds=2)))


def history_per_beat(c: client.TaskHubGrpcClient, address: str, hub: str) -> dict[str, float]:
    iid = c.schedule_new_orchestration(steady_pipeline, input=5.0)
    c.wait_for_orchestration_completion(iid, timeout=120)
    events = fetch_history(address, iid, hub)
    beats = sum(1 for e in events if e.HasField("eventRaised") and e.eventRaised.name == CONTROL_EVENT
                and '"beat"' in e.eventRaised.input.value)
    turns = sum(1 for e in events if e.HasField("orchestratorStarted"))
    return {"beats": beats, "events": len(events), "turns": turns,
            "events_per_beat": round(len(events) / beats, 2), "turns_per_beat": round(turns / beats, 2)}


def cancel_latency(c: client.TaskHubGrpcClient, runs: int) -> dict[str, float]:
    waits: list[float] = []
    for _ in range(runs):
        iid = c.schedule_new_orchestration(cancelled_pipeline, instance_id=f"cancel-{uuid.uuid4().hex[:8]}")
        c.wait_for_orchestration_start(iid, timeout=60)
        time.sleep(0.3)  # the activity runs and heartbeats
        sent = time.perf_counter()
        c.raise_orchestration_event(iid, "cancel")
        deadline = time.monotonic() + 60
        while iid not in _seen and time.monotonic() < deadline:
            time.sleep(0.005)
        waits.append((_seen[iid] - sent) * 1000)
        c.wait_for_orchestration_completion(iid, timeout=60)
    waits.sort()
    return {"runs": runs, "p50_ms": round(statistics.median(waits), 1),
            "p99_ms": round(waits[min(len(waits) - 1, int(len(waits) * 0.99))], 1)}


def many(c: client.TaskHubGrpcClient, address: str, hub: str, count: int) -> dict[str, Any]:
    ids = [c.schedule_new_orchestration(beating_pipeline, input=8.0) for _ in range(count)]
    time.sleep(2.0)  # they all run and heartbeat now
    starts: list[float] = []
    probes: list[str] = []
    for _ in range(100):
        began = time.perf_counter()
        probes.append(c.schedule_new_orchestration("nobody_runs_this"))
        starts.append((time.perf_counter() - began) * 1000)
        time.sleep(0.02)
    for iid in ids:
        c.wait_for_orchestration_completion(iid, timeout=300)
    received = 0
    for iid in ids:
        received += sum(1 for e in fetch_history(address, iid, hub)
                        if e.HasField("eventRaised") and '"beat"' in e.eventRaised.input.value)
    for iid in probes:
        c.terminate_orchestration(iid)
    starts.sort()
    return {"heartbeaters": count, "start_p50_ms": round(statistics.median(starts), 2),
            "start_p99_ms": round(starts[98], 2), "heartbeats_sent": sum(_sends), "heartbeats_in_histories": received}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cancels", type=int, default=30)
    parser.add_argument("--heartbeaters", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    address, hub = f"localhost:{server.port}", "default"
    w = worker.TaskHubGrpcWorker(host_address=address, concurrency_options=ConcurrencyOptions(
        maximum_concurrent_activity_work_items=max(100, args.heartbeaters)))
    for fn in (steady_pipeline, cancelled_pipeline, beating_pipeline):
        w.add_orchestrator(fn)
    for act in (steady, looping, beating):
        w.add_activity(act)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address)
    results: dict[str, Any] = {"cpu_us_per_heartbeat_call": round(cpu_per_call(), 3)}
    results["history_per_heartbeat"] = history_per_beat(c, address, hub)
    results["cancel_to_activity"] = cancel_latency(c, args.cancels)
    if args.heartbeaters:
        results["many"] = many(c, address, hub, args.heartbeaters)
    stopping = threading.Thread(target=w.stop)
    stopping.start()
    stopping.join()
    c.close()
    server.stop()
    print(json.dumps(results, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
