"""History-export fixtures: the emulator in-process, a task hub per test, a real Azurite for blob output."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task, worker
from durabletask.extensions.history_export import ExportHistoryClient, HistoryWriter
from durabletask.extensions.history_export import orchestrator as export_orchestrator


@pytest.fixture(scope="session")
def emulator_port() -> Iterator[int]:
    from dtscale_emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server.port
    server.stop()


@pytest.fixture
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Back-offs and idle sleeps of the export orchestration in fractions of a second, for this test."""
    monkeypatch.setattr(export_orchestrator, "_BATCH_RETRY_BACKOFF_OVERRIDE", timedelta(milliseconds=200))
    monkeypatch.setattr(export_orchestrator, "_CONTINUOUS_IDLE_DELAY_OVERRIDE", timedelta(milliseconds=300))
    monkeypatch.setattr(export_orchestrator, "_CONTINUOUS_SETTLE_DELAY_OVERRIDE", timedelta(milliseconds=200))
    monkeypatch.setattr(
        export_orchestrator,
        "EXPORT_ACTIVITY_RETRY_POLICY",
        task.RetryPolicy(first_retry_interval=timedelta(milliseconds=100), max_number_of_attempts=2),
    )


def greet(ctx: task.OrchestrationContext, name: str) -> Any:
    result = yield ctx.call_activity(hello, input=name)
    return result


def hello(_: task.ActivityContext, name: str) -> str:
    if name.startswith("fail"):
        raise RuntimeError(f"refusing {name}")
    return f"Hello, {name}!"


class ExportHub:
    """One task hub on the emulator: clients, an app worker running :func:`greet`, export workers."""

    def __init__(self, port: int, stack: ExitStack) -> None:
        self.address = f"localhost:{port}"
        self.taskhub = f"t{uuid.uuid4().hex[:12]}"
        self.metadata = [("taskhub", self.taskhub)]
        self._stack = stack
        self.workers: list[worker.TaskHubGrpcWorker] = []

    def client(self) -> client.TaskHubGrpcClient:
        c = client.TaskHubGrpcClient(host_address=self.address, metadata=self.metadata)
        self._stack.callback(c.close)
        return c

    def async_client(self) -> client.AsyncTaskHubGrpcClient:
        return client.AsyncTaskHubGrpcClient(host_address=self.address, metadata=self.metadata)

    def worker(self, logger: logging.Logger | None = None) -> worker.TaskHubGrpcWorker:
        w = worker.TaskHubGrpcWorker(host_address=self.address, metadata=self.metadata, logger=logger)
        self._stack.callback(w.stop)
        return w

    def export_client(
        self, writer: HistoryWriter, *, start_worker: bool = True, logger: logging.Logger | None = None
    ) -> ExportHistoryClient:
        """An export client; with ``start_worker``, also the hub's one worker, running the app and the exports
        (and writing to ``logger`` when given).

        Every worker of a task hub must know every orchestration, activity and entity, so there is one.
        """
        exporter = ExportHistoryClient(self.client(), writer)
        if start_worker:
            w = self.worker(logger)
            w.add_orchestrator(greet)
            w.add_activity(hello)
            exporter.register_worker(w)
            w.start()
            self.workers.append(w)
        return exporter

    def run_instances(self, names: list[str], prefix: str = "i") -> list[str]:
        """Runs :func:`greet` once per name to a terminal state; returns the instance IDs in order."""
        c = self.client()
        ids = [
            c.schedule_new_orchestration(greet, input=n, instance_id=f"{prefix}-{k:05d}") for k, n in enumerate(names)
        ]
        for instance_id in ids:
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            assert state is not None
        return ids


@pytest.fixture
def export_hub(emulator_port: int) -> Iterator[ExportHub]:
    with ExitStack() as stack:
        yield ExportHub(emulator_port, stack)
