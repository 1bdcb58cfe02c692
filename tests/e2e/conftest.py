"""End-to-end harness: real workers and clients over gRPC against the emulator started in-process on port 0.

Each test gets its own task hub, so tests are isolated without restarting the server. ``--endpoint`` and
``--taskhub`` point the same suite at another server (the public DTS emulator, or managed DTS without auth).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import pytest

from durabletask import client, worker


class Hub:
    """Where one test talks: an address and a task hub, with factories for clients and workers."""

    def __init__(self, address: str, taskhub: str, stack: ExitStack, server: Any | None) -> None:
        self.address = address
        self.taskhub = taskhub
        self.server = server
        self._stack = stack

    @property
    def metadata(self) -> list[tuple[str, str]]:
        return [("taskhub", self.taskhub)]

    def client(self) -> client.TaskHubGrpcClient:
        c = client.TaskHubGrpcClient(host_address=self.address, metadata=self.metadata)
        self._stack.callback(c.close)
        return c

    def async_client(self) -> client.AsyncTaskHubGrpcClient:
        return client.AsyncTaskHubGrpcClient(host_address=self.address, metadata=self.metadata)

    def worker(self, **kwargs: Any) -> worker.TaskHubGrpcWorker:
        w = worker.TaskHubGrpcWorker(host_address=self.address, metadata=self.metadata, **kwargs)
        self._stack.callback(w.stop)
        return w

    def start_worker(self, orchestrators: Sequence[Callable[..., Any]] = (),
                     activities: Sequence[Callable[..., Any]] = (), **kwargs: Any) -> worker.TaskHubGrpcWorker:
        w = self.worker(**kwargs)
        for fn in orchestrators:
            w.add_orchestrator(fn)
        for fn in activities:
            w.add_activity(fn)
        w.start()
        return w


@pytest.fixture(scope="session")
def emulator_server(request: pytest.FixtureRequest) -> Iterator[Any | None]:
    if request.config.getoption("--endpoint"):
        yield None
        return
    from emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def hub(request: pytest.FixtureRequest, emulator_server: Any | None) -> Iterator[Hub]:
    endpoint = request.config.getoption("--endpoint")
    with ExitStack() as stack:
        if endpoint:
            yield Hub(endpoint, request.config.getoption("--taskhub") or "default", stack, None)
        else:
            taskhub = f"t{uuid.uuid4().hex[:12]}"
            yield Hub(f"localhost:{emulator_server.port}", taskhub, stack, emulator_server)


def unique_id(prefix: str = "i") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
