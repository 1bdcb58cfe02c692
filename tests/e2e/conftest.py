"""End-to-end harness: real workers and clients over gRPC against the emulator started in-process on port 0.

Each test gets its own task hub, so tests are isolated without restarting the server. ``--backend`` (or
``--endpoint``), ``--taskhub`` and ``--connection-string`` point the same suite at another DTS endpoint through
the ``durabletask.azuremanaged`` classes (see tests/support/external/plugin.py): each test then gets a fresh task hub
where the backend creates them, else the shared one, from which it purges what it made.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import grpc
import pytest

from durabletask import client, worker
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from tests.support.external.backend import Backend, Made
from tests.support.external.plugin import external_backend, taskhubs


class Hub:
    """Where one test talks: an address and a task hub, with factories for clients and workers."""

    def __init__(self, address: str, taskhub: str, stack: ExitStack, server: Any | None,
                 backend: Backend | None = None) -> None:
        self.address = address
        self.taskhub = taskhub
        self.server = server
        self.backend = backend
        self.made = Made()
        self._stack = stack

    @property
    def metadata(self) -> list[tuple[str, str]]:
        return [("taskhub", self.taskhub)]

    def client(self) -> client.TaskHubGrpcClient:
        if self.backend is not None:
            c: client.TaskHubGrpcClient = self.backend.client(self.taskhub, [self.made.interceptor()])
        else:
            c = client.TaskHubGrpcClient(host_address=self.address, metadata=self.metadata)
        self._stack.callback(c.close)
        return c

    def async_client(self) -> client.AsyncTaskHubGrpcClient:
        if self.backend is not None:
            return self.backend.async_client(self.taskhub, [self.made.async_interceptor()])
        return client.AsyncTaskHubGrpcClient(host_address=self.address, metadata=self.metadata)

    def worker(self, **kwargs: Any) -> worker.TaskHubGrpcWorker:
        if self.backend is not None:
            interceptors = [self.made.interceptor(), *(kwargs.pop("interceptors", None) or [])]
            w: worker.TaskHubGrpcWorker = self.backend.worker(self.taskhub, interceptors, **kwargs)
        else:
            w = worker.TaskHubGrpcWorker(host_address=self.address, metadata=self.metadata, **kwargs)
        self._stack.callback(w.stop)
        return w

    def cli_args(self) -> list[str]:
        """Where the ``durabletask`` command line connects to reach this hub."""
        if self.backend is not None:
            return self.backend.cli_args(self.taskhub)
        return ["--endpoint", self.address, "--taskhub", self.taskhub]

    def connection_string(self) -> str:
        if self.backend is not None:
            return self.backend.connection_string(self.taskhub)
        return f"Endpoint=http://{self.address};Authentication=None;TaskHub={self.taskhub}"

    def child_env(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` for a child process that connects with :meth:`connection_string`."""
        return self.backend.child_env(base) if self.backend is not None else base

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
    if external_backend(request.config) is not None:
        yield None
        return
    from dtscale_emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def hub(request: pytest.FixtureRequest, emulator_server: Any | None) -> Iterator[Hub]:
    backend, hubs = external_backend(request.config), taskhubs(request.config)
    if backend is None or hubs is None:
        address, name = f"localhost:{emulator_server.port}", f"t{uuid.uuid4().hex[:12]}"
        with ExitStack() as stack:
            yield Hub(address, name, stack, emulator_server)
        # The session's emulator serves a bounded number of task hubs, as DTS does: each test gives its own back.
        _delete_taskhub(address, name)
        return
    name = hubs.open()
    try:
        with ExitStack() as stack:
            found = Hub(backend.endpoint, name, stack, None, backend)
            yield found
            hubs.clean(name, found.made)  # while the workers still run, so terminations are carried out
    finally:
        hubs.release(name)


def _delete_taskhub(address: str, name: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.DeleteTaskHub(pb.DeleteTaskHubRequest(), metadata=[("taskhub", name)], timeout=60)


def unique_id(prefix: str = "i") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
