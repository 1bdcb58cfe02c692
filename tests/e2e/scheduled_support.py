"""A task hub on an emulator with a manual clock, a worker running schedules on that clock, and waits."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker
from durabletask.scheduled import ScheduleDescription, ScheduledTaskClient

T = TypeVar("T")
START = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)


def report(ctx: task.OrchestrationContext, payload: Any) -> Any:
    """The scheduled orchestration of these tests: returns its input."""
    return payload


@dataclass
class ScheduleHub:
    server: EmulatorServer
    clock: ManualClock
    taskhub: str
    stack: ExitStack

    @property
    def metadata(self) -> list[tuple[str, str]]:
        return [("taskhub", self.taskhub)]

    def client(self) -> client.TaskHubGrpcClient:
        made = client.TaskHubGrpcClient(host_address=self.server.address, metadata=self.metadata)
        self.stack.callback(made.close)
        return made

    def async_client(self) -> client.AsyncTaskHubGrpcClient:
        return client.AsyncTaskHubGrpcClient(host_address=self.server.address, metadata=self.metadata)

    def schedules(self) -> ScheduledTaskClient:
        return ScheduledTaskClient(self.client(), operation_timeout=30)

    def start_worker(self) -> worker.TaskHubGrpcWorker:
        made = worker.TaskHubGrpcWorker(host_address=self.server.address, metadata=self.metadata)
        made.add_orchestrator(report)
        made.configure_scheduled_tasks(clock=self.clock.now)
        made.start()
        self.stack.callback(made.stop)
        return made


@contextmanager
def schedule_hub(server: EmulatorServer, clock: ManualClock) -> Iterator[ScheduleHub]:
    with ExitStack() as stack:
        yield ScheduleHub(server, clock, f"s{uuid.uuid4().hex[:12]}", stack)


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    """Polls ``probe`` until it returns something true; fails naming ``what`` (a hang guard, not a timing check)."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def run_id(schedule_id: str, due: datetime) -> str:
    return f"{schedule_id}-{due.isoformat()}"


def next_run_changes(schedules: ScheduledTaskClient, schedule_id: str, old: datetime | None) -> ScheduleDescription:
    """The schedule once its entity has armed a wake-up other than ``old``."""

    def probe() -> ScheduleDescription | None:
        found = schedules.get_schedule(schedule_id)
        return found if found is not None and found.next_run_at not in (None, old) else None

    return wait_for(probe, f"schedule {schedule_id} to move past {old}")


def runs_of(c: client.TaskHubGrpcClient, schedule_id: str) -> list[str]:
    """The instance IDs of the runs a schedule started, sorted."""
    query = client.OrchestrationQuery(instance_id_prefix=f"{schedule_id}-")
    return sorted(s.instance_id for s in c.get_all_orchestration_states(query) if s.name == "report")


def at(interval: timedelta, k: int, start: datetime = START) -> datetime:
    return start + interval * k
