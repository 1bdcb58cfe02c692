"""Leased work starts before its lease ends: a worker never holds more than its threads can run at once."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker

pytestmark = pytest.mark.adversarial

ACTIVITIES = 60
THREADS = 2
WORK_SECONDS = 0.1  # simulated work per activity: 60 of them on 2 threads take about 3 s
LEASE_SECONDS = 2.0  # far above one activity, well below the whole batch


@pytest.fixture
def short_lease_server() -> Iterator[EmulatorServer]:
    server = EmulatorServer(port=0, in_memory=True, lease_timeout=LEASE_SECONDS, health_ping_interval=0.5)
    server.start()
    yield server
    server.stop()


def test_every_leased_activity_runs_exactly_once(short_lease_server: EmulatorServer) -> None:
    runs: Counter[int] = Counter()
    lock = threading.Lock()

    def work(ctx: task.ActivityContext, n: int) -> int:
        with lock:
            runs[n] += 1
        threading.Event().wait(WORK_SECONDS)  # simulated work, not a wait for a condition
        return n

    def fan_out(ctx: task.OrchestrationContext, count: int) -> Any:
        return (yield task.when_all([ctx.call_activity(work, input=i) for i in range(count)]))

    # Default per-kind limits (100 per CPU) with a small thread pool: before, the worker took every
    # activity at once and most waited in its queue until their leases ran out and they ran again.
    w = worker.TaskHubGrpcWorker(
        host_address=short_lease_server.address,
        concurrency_options=worker.ConcurrencyOptions(maximum_thread_pool_workers=THREADS),
    )
    w.add_orchestrator(fan_out)
    w.add_activity(work)
    c = client.TaskHubGrpcClient(host_address=short_lease_server.address)
    with w:
        w.start()
        iid = c.schedule_new_orchestration(fan_out, input=ACTIVITIES, instance_id=f"lease-{uuid.uuid4().hex[:8]}")
        state = c.wait_for_orchestration_completion(iid, timeout=60)
    c.close()
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert sorted(state.get_output() or []) == list(range(ACTIVITIES))
    assert runs == Counter(range(ACTIVITIES))  # each exactly once
