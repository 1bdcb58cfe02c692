"""What the run and thread tests share: an emulator, a task hub per test with a worker serving the test graphs,
and an HTTP server with the thread and run routes behind the application's middleware, reached with
``langgraph_sdk``'s own client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from durabletask import client as dt_client
from durabletask import worker as dt_worker
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.extensions.langgraph import DurableGraph, register_graph
from durabletask.extensions.langgraph._server import runs, threads
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from tests.langgraph_server.support_hosting import application, hosted
from tests.langgraph_server.support_runs_graphs import BUILDERS


@pytest.fixture(scope="session")
def runs_emulator() -> Iterator[Any]:
    from dtscale_emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server
    server.stop()


@dataclass
class RunsHub:
    """One task hub of the emulator."""

    address: str
    taskhub: str

    @property
    def metadata(self) -> list[tuple[str, str]]:
        return [("taskhub", self.taskhub)]

    def async_client(self) -> dt_client.AsyncTaskHubGrpcClient:
        return dt_client.AsyncTaskHubGrpcClient(host_address=self.address, metadata=self.metadata)

    def worker(self) -> dt_worker.TaskHubGrpcWorker:
        return dt_worker.TaskHubGrpcWorker(host_address=self.address, metadata=self.metadata)


@pytest.fixture
def runs_hub(runs_emulator: Any) -> Iterator[RunsHub]:
    hub = RunsHub(f"localhost:{runs_emulator.port}", f"t{uuid.uuid4().hex[:12]}")
    yield hub
    with grpc.insecure_channel(hub.address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.DeleteTaskHub(pb.DeleteTaskHubRequest(), metadata=hub.metadata, timeout=60)


def graphs() -> dict[str, Any]:
    """The test graphs, compiled without a checkpointer, by graph ID."""
    return {name: build().compile() for name, build in BUILDERS.items()}


@dataclass
class Served:
    """A running server over one task hub, its worker's graphs, and clients."""

    url: str
    ctx: ServerContext
    sdk: LangGraphClient
    http: httpx.AsyncClient
    graphs: dict[str, Any]

    def durable(self, graph_id: str) -> DurableGraph:
        """The same graph through ``DurableGraph``, on the same task hub."""
        return DurableGraph(self.ctx.client, graph_id, self.graphs[graph_id])


@asynccontextmanager
async def serve(hub: RunsHub, *, start_worker: bool = True) -> AsyncIterator[Served]:
    """The thread and run routes on port 0 over ``hub``, and a worker serving the test graphs."""
    compiled = graphs()
    w = hub.worker()
    for name, graph in compiled.items():
        register_graph(w, name, graph)
    client = hub.async_client()
    settings = ServerSettings(project=ProjectConfig(path=Path(__file__).parent / "langgraph.json", graphs={}))
    ctx = ServerContext(client=client, graphs=compiled, settings=settings)
    async with hosted(application(ctx, threads, runs), ctx, w, start_worker=start_worker) as h:
        yield Served(h.url, ctx, h.sdk, h.http, compiled)
