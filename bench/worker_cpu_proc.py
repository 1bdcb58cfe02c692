"""A worker with bench/worker_cpu.py's functions registered, on either SDK; runs until stdin closes, prints ``ready``.

Usage: worker_cpu_proc.py ADDRESS [--cache N] [--thread-polling]
(--cache: our SDK's extended sessions; 0 turns them off. --thread-polling: the SDK's opt-in gRPC client polling;
without it the worker runs in the SDK's default configuration, as the issue-44 figures are measured.)
The same file runs under Microsoft's SDK (peer venv), which has neither and ignores both.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from polling_opt_in import opt_in

# Before anything imports grpc: our SDK with its opt-in client polling, when asked (a no-op under Microsoft's).
if "--thread-polling" in sys.argv:
    opt_in()

# isort: split
from durabletask import task, worker

BIG = "x" * 10_240  # what the 10 KB activity returns


def chain(ctx: task.OrchestrationContext, n: int) -> Any:
    total = 0
    for i in range(n):
        total += yield ctx.call_activity(step, input=i)
    return total


def fan_out(ctx: task.OrchestrationContext, n: int) -> Any:
    results = yield task.when_all([ctx.call_activity(step, input=i) for i in range(n)])
    return sum(results)


def step(ctx: task.ActivityContext, x: int) -> int:
    return x + 1


def big(ctx: task.ActivityContext, _: Any) -> str:
    return BIG


def counter(ctx: Any, value: Any) -> None:
    if ctx.operation == "add":
        ctx.set_state((ctx.get_state(int) or 0) + value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("--cache", type=int, default=None)
    parser.add_argument("--thread-polling", action="store_true")
    args = parser.parse_args()
    options: dict[str, Any] = {}
    if args.cache is not None and hasattr(worker, "ExtendedSessionOptions"):
        options["extended_sessions"] = worker.ExtendedSessionOptions(
            max_cached_orchestrations=args.cache, idle_timeout_seconds=3600
        )
    w = worker.TaskHubGrpcWorker(host_address=args.address, **options)
    for fn in (chain, fan_out):
        w.add_orchestrator(fn)
    for fn in (step, big):
        w.add_activity(fn)
    w.add_entity(counter)
    w.start()
    print("ready", flush=True)
    sys.stdin.read()
    w.stop()


if __name__ == "__main__":
    main()
