"""The benchmark worker and client for an external DTS endpoint, under whichever SDK runs it.

    python external_proc.py worker URL TASKHUB                 -> prints ``ready``, runs until stdin closes
    python external_proc.py client URL TASKHUB SCENARIO SIZE   -> prints one JSON line with the figures

Both use the DurableTaskScheduler classes with the credential tests/support/endpoint.py reads from the
environment (``DTS_TEST_TOKEN``, ``DTS_TEST_AUTHENTICATION``); TLS follows the URL's scheme. The client purges
the instances it started once they are measured, so a shared scheduler keeps nothing from the run.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# The credential helper is shared with the interop peer; only its folder goes on the path, never our package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))

import endpoint  # type: ignore[import-not-found]
from workloads import ACTIVITIES, ORCHESTRATORS, chain3, fan_out, long_chain

from durabletask import client


def serve(address: str, taskhub: str) -> None:
    from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

    w = DurableTaskSchedulerWorker(host_address=address, taskhub=taskhub, token_credential=endpoint.credential())
    for fn in ORCHESTRATORS:
        w.add_orchestrator(fn)
    for fn in ACTIVITIES:
        w.add_activity(fn)
    w.start()
    print("ready", flush=True)
    sys.stdin.read()
    w.stop()


def _wait(c: Any, instance_id: str, timeout: float) -> None:
    state = c.wait_for_orchestration_completion(instance_id, timeout=timeout)
    if state is None or state.runtime_status != client.OrchestrationStatus.COMPLETED:
        raise RuntimeError(f"{instance_id} did not complete: {state}")


def _timed(c: Any, made: list[str], orchestrator: Any, value: int, timeout: float) -> float:
    start = time.perf_counter()
    made.append(c.schedule_new_orchestration(orchestrator, input=value))
    _wait(c, made[-1], timeout)
    return time.perf_counter() - start


def measure(c: Any, scenario: str, size: int, made: list[str]) -> dict[str, Any]:
    _timed(c, made, chain3, 0, 120)  # warm-up: connections, first work items
    if scenario == "throughput":
        start = time.perf_counter()
        ids = [c.schedule_new_orchestration(chain3, input=i) for i in range(size)]
        made.extend(ids)
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda i: _wait(c, i, 600), ids))
        elapsed = time.perf_counter() - start
        return {"count": size, "seconds": elapsed, "per_second": size / elapsed}
    if scenario == "one_at_a_time":
        elapsed = sum(_timed(c, made, chain3, i, 120) for i in range(size))
        return {"count": size, "seconds": elapsed, "per_second": size / elapsed}
    if scenario == "fan_out":
        return {"size": size, "seconds": _timed(c, made, fan_out, size, 600)}
    if scenario == "chain":
        return {"size": size, "seconds": _timed(c, made, long_chain, size, 600)}
    raise SystemExit(f"unknown scenario {scenario}")


def drive(address: str, taskhub: str, scenario: str, size: int) -> None:
    from durabletask.azuremanaged.client import DurableTaskSchedulerClient

    c = DurableTaskSchedulerClient(host_address=address, taskhub=taskhub, token_credential=endpoint.credential())
    made: list[str] = []
    try:
        result = measure(c, scenario, size, made)
    finally:
        for instance_id in made:
            c.purge_orchestration(instance_id)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        serve(sys.argv[2], sys.argv[3])
    else:
        drive(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
