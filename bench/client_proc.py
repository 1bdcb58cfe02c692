"""Drives one scenario against a running backend and worker; prints one JSON line with the figures."""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from polling_opt_in import opt_in

# Before anything imports grpc: our SDK measured with its opt-in client polling (a no-op under Microsoft's).
opt_in()

# isort: split
from workloads import chain3, fan_out, long_chain  # noqa: E402

from durabletask import client  # noqa: E402


def _run_one(c: client.TaskHubGrpcClient, orchestrator: Any, value: int, timeout: float) -> float:
    start = time.perf_counter()
    iid = c.schedule_new_orchestration(orchestrator, input=value)
    state = c.wait_for_orchestration_completion(iid, timeout=timeout)
    if state is None or state.runtime_status != client.OrchestrationStatus.COMPLETED:
        raise RuntimeError(f"{iid} did not complete: {state}")
    return time.perf_counter() - start


def throughput(c: client.TaskHubGrpcClient, count: int) -> dict[str, Any]:
    start = time.perf_counter()
    ids = [c.schedule_new_orchestration(chain3, input=i) for i in range(count)]

    def wait(iid: str) -> None:
        state = c.wait_for_orchestration_completion(iid, timeout=600)
        if state is None or state.runtime_status != client.OrchestrationStatus.COMPLETED:
            raise RuntimeError(f"{iid} did not complete")

    # Few waiters: each holds a server thread for its whole wait, and the official test backend serves
    # all calls from 10 threads; more waiters would starve the worker's completions there.
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(wait, ids))
    elapsed = time.perf_counter() - start
    return {"count": count, "seconds": elapsed, "per_second": count / elapsed, "latencies": _latencies(c, ids)}


def _latencies(c: client.TaskHubGrpcClient, ids: list[str]) -> list[float]:
    """Each orchestration's seconds from its creation to its completion, both stamped by the backend."""
    found = []
    for iid in ids:
        state = c.get_orchestration_state(iid, fetch_payloads=False)
        if state is not None:
            found.append((state.last_updated_at - state.created_at).total_seconds())
    return found


def main() -> None:
    address, scenario, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    c = client.TaskHubGrpcClient(host_address=address)
    _run_one(c, chain3, 0, 120)  # warm-up: connections, first work items
    if scenario == "throughput":
        result = throughput(c, size)
    elif scenario == "one_at_a_time":
        start = time.perf_counter()
        for i in range(size):
            _run_one(c, chain3, i, 120)
        elapsed = time.perf_counter() - start
        result = {"count": size, "seconds": elapsed, "per_second": size / elapsed}
    elif scenario == "fan_out":
        result = {"size": size, "seconds": _run_one(c, fan_out, size, 600)}
    elif scenario == "chain":
        result = {"size": size, "seconds": _run_one(c, long_chain, size, 600)}
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
