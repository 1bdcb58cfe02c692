"""What the run and thread tests share: an emulator, a task hub per test with a worker serving the test graphs,
and an HTTP server with the thread and run routes behind the application's middleware, reached with
``langgraph_sdk``'s own client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from durabletask.extensions.langgraph import DurableGraph, register_graph
from durabletask.extensions.langgraph._server import runs, threads
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from tests.langgraph_server.support_hosting import TaskHub, application, emulator_running, fresh_hub, hosted
from tests.langgraph_server.support_runs_graphs import BUILDERS


@pytest.fixture(scope="session")
def runs_emulator() -> Iterator[Any]:
    yield from emulator_running()


#: One task hub of the emulator.
RunsHub = TaskHub


@pytest.fixture
def runs_hub(runs_emulator: Any) -> Iterator[RunsHub]:
    yield from fresh_hub(runs_emulator, "t")


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
