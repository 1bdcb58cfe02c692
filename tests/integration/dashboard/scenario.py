"""A small, real workload for the dashboard: an emulator, a worker, and instances in every interesting state.

Used by the browser tests and by docs/screenshots.py. Everything runs in-process: the emulator on its loop
thread, the dashboard on the same loop (as ``durabletask-emulator`` serves it), the worker on its threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from dtscale_emulator.dashboard import Dashboard, start
from dtscale_emulator.dashboard.connect import endpoint_clients
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker
from durabletask.entities import EntityContext
from durabletask.scheduled import ScheduleCreationOptions, ScheduledTaskClient

HUB = "default"
# Flipped by a test to let the failing activity succeed, so a rewound instance can complete.
healed = threading.Event()


def greet(ctx: task.ActivityContext, name: str) -> str:
    return f"Hello, {name}!"


def charge(ctx: task.ActivityContext, amount: int) -> int:
    if not healed.is_set():
        raise RuntimeError(f"card declined for {amount}")
    return amount


_attempts: dict[str, int] = {}


def flaky(ctx: task.ActivityContext, _: Any) -> str:
    # Fails on its first two attempts in each instance: the timeline shows the retries.
    _attempts[ctx.orchestration_id] = _attempts.get(ctx.orchestration_id, 0) + 1
    if _attempts[ctx.orchestration_id] <= 2:
        raise ConnectionError("upstream timed out")
    return "ok"


def hello(ctx: task.OrchestrationContext, _: Any) -> list[str]:
    results = []
    for city in ("Tokyo", "Seattle", "London"):
        results.append((yield ctx.call_activity(greet, input=city)))
    return results


def checkout(ctx: task.OrchestrationContext, order: dict[str, Any]) -> int:
    yield ctx.call_activity(greet, input=order["customer"])
    yield ctx.create_timer(timedelta(milliseconds=50))
    return (yield ctx.call_activity(charge, input=order["amount"]))


def approval(ctx: task.OrchestrationContext, _: Any) -> str:
    decision = yield ctx.wait_for_external_event("approve")
    return f"approved: {decision}"


def retrying(ctx: task.OrchestrationContext, _: Any) -> str:
    policy = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=20), max_number_of_attempts=4)
    result = yield ctx.call_activity(flaky, input=None, retry_policy=policy)
    return result


def parent(ctx: task.OrchestrationContext, _: Any) -> list[str]:
    return (yield ctx.call_sub_orchestrator(hello, instance_id=f"{ctx.instance_id}-child"))


def counter(ctx: EntityContext, value: Any) -> int:
    current = ctx.get_state(int, 0)
    if ctx.operation == "add":
        ctx.set_state(current + int(value))
    return ctx.get_state(int, 0)


ORCHESTRATORS = (hello, checkout, approval, retrying, parent)


@dataclass
class Scenario:
    server: EmulatorServer
    dashboard: Dashboard
    client: client.TaskHubGrpcClient

    @property
    def url(self) -> str:
        return self.dashboard.url


@contextmanager
def running(*, token: str | None = None, live_interval: float = 0.3) -> Iterator[Scenario]:
    """An emulator with a worker and a dashboard, torn down on exit."""
    healed.clear()
    server = EmulatorServer(port=0, in_memory=True, task_hubs=(HUB, "other")).start()
    clients = endpoint_clients(server.address, None)
    board = aio_loop.run(start(clients, [HUB, "other"], port=0, token=token, live_interval=live_interval))
    w = worker.TaskHubGrpcWorker(host_address=server.address, metadata=[("taskhub", HUB)])
    for fn in ORCHESTRATORS:
        w.add_orchestrator(fn)
    for fn in (greet, charge, flaky):
        w.add_activity(fn)
    w.add_entity(counter)
    w.configure_scheduled_tasks()
    w.use_work_item_filters()  # takes only what it registered: an unknown orchestration stays PENDING
    w.start()
    c = client.TaskHubGrpcClient(host_address=server.address, metadata=[("taskhub", HUB)])
    try:
        yield Scenario(server, board, c)
    finally:
        c.close()
        w.stop()
        aio_loop.run(board.close())
        server.close()


def populate(c: client.TaskHubGrpcClient, *, extra: int = 30) -> dict[str, str]:
    """Instances for every page: completed, failed, waiting, retried, parent/child, pending, plus a long tail."""
    ids = {
        "hello": c.schedule_new_orchestration(hello, instance_id="hello-1", tags={"team": "web"}),
        "failed": c.schedule_new_orchestration(
            checkout, instance_id="order-17", input={"customer": "Ada", "amount": 42}, tags={"team": "shop"}
        ),
        "waiting": c.schedule_new_orchestration(approval, instance_id="approval-3"),
        "retried": c.schedule_new_orchestration(retrying, instance_id="retry-5"),
        "parent": c.schedule_new_orchestration(parent, instance_id="parent-9"),
        "pending": c.schedule_new_orchestration("nobody_runs_this", instance_id="stuck-1", version="2.0"),
    }
    for n in range(extra):
        c.schedule_new_orchestration(hello, instance_id=f"batch-{n:03d}", tags={"batch": "yes"})
    # A schedule whose first run is a day away: it shows on the Schedules page without adding instances.
    ScheduledTaskClient(c).create_schedule(
        ScheduleCreationOptions(
            "nightly-report",
            "hello",
            interval=timedelta(hours=24),
            start_at=datetime.now(timezone.utc) + timedelta(days=1),
        )
    )
    for key in ("hello", "failed", "retried", "parent"):
        c.wait_for_orchestration_completion(ids[key], timeout=30)
    c.wait_for_orchestration_start(ids["waiting"], timeout=30)
    for n in range(extra):
        c.wait_for_orchestration_completion(f"batch-{n:03d}", timeout=30)
    return ids
