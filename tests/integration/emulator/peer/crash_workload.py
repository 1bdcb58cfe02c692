"""A fan-out workload run by the official SDK for the crash test.

Usage: python crash_workload.py HOST:PORT LOG_FILE COUNT WIDTH
Each activity appends "<instance>:<n>" to LOG_FILE when it runs. Prints one JSON line with every
instance's final status and output once all finish (retrying across emulator restarts).
"""

from __future__ import annotations

import json
import sys
import time

import grpc

from durabletask import client, task, worker

LOG = sys.argv[2]


def work(ctx: task.ActivityContext, n: int) -> int:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(f"{ctx.orchestration_id}:{n}\n")
    time.sleep(0.05)
    return n * n


def fan(ctx: task.OrchestrationContext, width: int):
    first = yield task.when_all([ctx.call_activity(work, input=i) for i in range(width)])
    second = yield ctx.call_activity(work, input=100)
    return sum(first) + second


def wait_all(c: client.TaskHubGrpcClient, ids: list[str], deadline: float) -> dict[str, object]:
    results: dict[str, object] = {}
    while len(results) < len(ids) and time.time() < deadline:
        for iid in ids:
            if iid in results:
                continue
            try:
                state = c.wait_for_orchestration_completion(iid, timeout=5)
            except (grpc.RpcError, TimeoutError):
                time.sleep(0.2)
                continue
            if state is not None:
                results[iid] = [state.runtime_status.name, json.loads(state.serialized_output or "null")]
    return results


def main() -> None:
    address, count, width = sys.argv[1], int(sys.argv[3]), int(sys.argv[4])
    options = worker.ConcurrencyOptions(maximum_concurrent_activity_work_items=4)
    w = worker.TaskHubGrpcWorker(host_address=address, concurrency_options=options)
    w.add_orchestrator(fan)
    w.add_activity(work)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address)
    ids = [c.schedule_new_orchestration(fan, input=width, instance_id=f"crash-{i}") for i in range(count)]
    print(json.dumps({"started": ids}), flush=True)
    results = wait_all(c, ids, time.time() + 90)
    print(json.dumps({"results": results}), flush=True)
    w.stop()


if __name__ == "__main__":
    main()
