"""Replay cost per history event: our executor and Microsoft's, on the same recorded activity chain.

The history is an orchestrator that calls one activity N times in sequence (4 events per activity plus 2:
40,002 events for N = 10,000). Both executors receive it as the same serialized ``OrchestratorRequest``
bytes and replay all of it; only the ``execute`` call is timed (best of ``--repeat`` runs, each in the
executor's own process). Microsoft's SDK runs in its isolated venv (``DTS_PEER_PYTHON``, default
``.peer-venv/bin/python``, which ``python3 dev.py bench`` creates). Sequence IDs start at 1 in the recorded
history, as both SDKs number them.

Our executor replays the same history twice: under the generator orchestrator (``yield``) and under its
``async def`` rewrite (``await``), printed side by side with their ratio (target: async within 10 %).

Usage: python bench/replay.py [--activities 10000] [--repeat 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER = os.environ.get("DTS_PEER_PYTHON") or str(Path(__file__).resolve().parent.parent / ".peer-venv/bin/python")

# Runs inside either interpreter: only the imports differ. ``{setup}`` defines ``EXECUTORS``, label ->
# ``execute(old, new) -> actions``; several executors are timed in turns so that load on the machine
# weighs on each alike.
_RUNNER = r"""
import gc, json, sys, time
{setup}
request = pb.OrchestratorRequest()
request.ParseFromString(sys.stdin.buffer.read())
old, new = list(request.pastEvents), list(request.newEvents)
best = {{label: float("inf") for label in EXECUTORS}}
actions = {{}}
for _ in range({repeat}):
    for label, execute in EXECUTORS.items():
        gc.collect()
        start = time.perf_counter()
        actions[label] = execute(old, new)
        best[label] = min(best[label], time.perf_counter() - start)
out = {{}}
for label, done in actions.items():
    last = done[-1].completeOrchestration if done else None
    out[label] = {{"seconds": best[label], "events": len(old) + len(new),
                  "kinds": [a.WhichOneof("orchestratorActionType") for a in done],
                  "status": last.orchestrationStatus if last else None,
                  "result": last.result.value if last else None}}
print(json.dumps(out))
"""

# The same chain as a generator (``yield``) and as ``async def`` (``await``), each registered as "chain".
_OURS = """
import logging
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._registry import Registry

def chain(ctx, n):
    value = 0
    for _ in range(n):
        value = yield ctx.call_activity("step", input=value)
    return value

async def async_chain(ctx, n):
    value = 0
    for _ in range(n):
        value = await ctx.call_activity("step", input=value)
    return value

log = logging.getLogger("bench.ours")
log.setLevel(logging.WARNING)

def executor_for(orchestrator):
    registry = Registry()
    registry.add_orchestrator(orchestrator, name="chain")

    def execute(old, new):
        executor = OrchestrationExecutor(registry, logger=log)
        return executor.execute("bench", old, new).actions

    return execute

EXECUTORS = {"ours": executor_for(chain), "ours async": executor_for(async_chain)}
"""

_THEIRS = """
import logging
from durabletask import worker
from durabletask.internal import orchestrator_service_pb2 as pb
from durabletask.serialization import DEFAULT_DATA_CONVERTER

def chain(ctx, n):
    value = 0
    for _ in range(n):
        value = yield ctx.call_activity("step", input=value)
    return value

registry = worker._Registry()
registry.add_orchestrator(chain)
log = logging.getLogger("bench.theirs")
log.setLevel(logging.WARNING)

def execute(old, new):
    executor = worker._OrchestrationExecutor(registry, log, DEFAULT_DATA_CONVERTER)
    return executor.execute("bench", old, new).actions

EXECUTORS = {"microsoft": execute}
"""


def build_history(activities: int) -> bytes:
    """The serialized request replaying a chain of ``activities`` calls, each answered with input + 1."""
    sys.path.insert(0, str(ROOT))
    from durabletask._proto import orchestrator_service_pb2 as pb

    clock = datetime(2025, 1, 1)
    events: list[pb.HistoryEvent] = []

    def add(event_id: int = -1, **kind: object) -> None:
        event = pb.HistoryEvent(eventId=event_id, **kind)  # type: ignore[arg-type]
        event.timestamp.FromDatetime(clock)
        events.append(event)

    add(orchestratorStarted=pb.OrchestratorStartedEvent())
    started = pb.ExecutionStartedEvent(name="chain", orchestrationInstance=pb.OrchestrationInstance(instanceId="bench"))
    started.input.value = str(activities)
    add(executionStarted=started)
    for seq in range(1, activities + 1):
        scheduled = pb.TaskScheduledEvent(name="step")
        scheduled.input.value = str(seq - 1)
        add(seq, taskScheduled=scheduled)
        add(orchestratorCompleted=pb.OrchestratorCompletedEvent())
        clock += timedelta(seconds=1)
        add(orchestratorStarted=pb.OrchestratorStartedEvent())
        completed = pb.TaskCompletedEvent(taskScheduledId=seq)
        completed.result.value = str(seq)
        add(taskCompleted=completed)
    request = pb.OrchestratorRequest(instanceId="bench", pastEvents=events[:-2], newEvents=events[-2:])
    return request.SerializeToString()


def measure(python: str, setup: str, history: bytes, repeat: int, *, ours: bool) -> dict[str, dict[str, object]]:
    code = _RUNNER.format(setup=setup, repeat=repeat)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    # ``python -c`` puts the working directory on sys.path: keep our package out of the peer's way.
    cwd = str(ROOT) if ours else tempfile.gettempdir()
    done = subprocess.run([python, "-c", code], input=history, capture_output=True, check=False, env=env,
                          cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed:\n{done.stderr.decode(errors='replace')}")
    figures: dict[str, dict[str, object]] = json.loads(done.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--activities", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1,000 activities, best of 2")
    args = parser.parse_args()
    if args.quick:
        args.activities, args.repeat = 1_000, 2

    history = build_history(args.activities)
    rows = list(measure(sys.executable, _OURS, history, args.repeat, ours=True).items())
    if Path(PEER).exists():
        rows.extend(measure(PEER, _THEIRS, history, args.repeat, ours=False).items())
    else:
        print(f"(Microsoft's SDK not found at {PEER}; set DTS_PEER_PYTHON to compare)")
    ours = rows[0][1]

    print(f"replaying a {args.activities}-activity chain ({ours['events']} events), best of {args.repeat}:")
    per_event: dict[str, float] = {}
    for label, figures in rows:
        seconds = float(figures["seconds"])  # type: ignore[arg-type]
        per_event[label] = seconds / int(figures["events"])  # type: ignore[call-overload]
        print(f"  {label:<10} {seconds * 1e3:9.1f} ms total  {per_event[label] * 1e6:7.2f} µs/event  "
              f"-> {figures['kinds']} result={figures['result']}")
    ratio_async = per_event["ours async"] / per_event["ours"]
    print(f"  ratio ours async/ours (await vs yield, timed in turns): {ratio_async:.3f} (target <= 1.10)")
    if "microsoft" in per_event:
        ratio = per_event["ours"] / per_event["microsoft"]
        print(f"  ratio ours/microsoft: {ratio:.3f} (target <= 0.333)")


if __name__ == "__main__":
    main()
