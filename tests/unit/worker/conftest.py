"""Fixtures for the worker tests: a fake sidecar server and a worker wired to it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from worker_fakes import FakeExecutor, Server

from durabletask.grpc_options import GrpcWorkerResiliencyOptions
from durabletask.worker import TaskHubGrpcWorker


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.stop()


@pytest.fixture
def logger() -> logging.Logger:
    log = logging.getLogger("durabletask-worker-tests")
    log.setLevel(logging.DEBUG)
    return log


FAST = GrpcWorkerResiliencyOptions(
    hello_timeout_seconds=5,
    silent_disconnect_timeout_seconds=0,
    reconnect_backoff_base_seconds=0.01,
    reconnect_backoff_cap_seconds=0.05,
)

WorkerFactory = Callable[..., TaskHubGrpcWorker]


class _ScriptedWorker(TaskHubGrpcWorker):
    """A worker whose orchestration turns run on a scripted executor (its one replaceable runner)."""

    def __init__(self, executor: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._scripted = executor

    def _replay_executor_factory(self, built_in: Any) -> Any:
        return lambda: self._scripted


@pytest.fixture
def make_worker(server: Server, logger: logging.Logger) -> Iterator[WorkerFactory]:
    """Build workers bound to the fake server; each is stopped at the end of the test."""
    made: list[TaskHubGrpcWorker] = []

    def make(executor: Any | None = None, **kwargs: Any) -> TaskHubGrpcWorker:
        kwargs.setdefault("host_address", server.address)
        kwargs.setdefault("logger", logger)
        kwargs.setdefault("resiliency_options", FAST)
        worker = _ScriptedWorker(executor if executor is not None else FakeExecutor(), **kwargs)
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.stop(grace_period=5)
