"""What the race tests share: servers whose run admissions can be held at one point and let go together.

A run's admission is the record write that makes it (an entity signal of operation ``run`` carrying ``admit``). A
:class:`Barrier` holds each admission there until every request of the race has passed the server's own look at
the thread, then lets them all go at once: the record alone decides between them. No sleep is involved.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from durabletask.extensions.langgraph import register_graph
from durabletask.extensions.langgraph._server import protocol, runs, threads
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from tests.langgraph_server.support_hosting import application, hosted
from tests.langgraph_server.support_runs import RunsHub, Served, graphs


class Barrier:
    """Holds run admissions until ``parties`` of them have arrived, then releases them together."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.released = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.released.set()
        await self.released.wait()


class HeldClient:
    """The task hub's async client, whose run admissions wait at a :class:`Barrier` (when one is set)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.barrier: Barrier | None = None
        self.admissions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def signal_entity(self, entity: Any, operation: str, input: Any = None, **kwargs: Any) -> None:
        if operation == "run" and isinstance(input, dict) and "admit" in input:
            self.admissions += 1
            if self.barrier is not None:
                await self.barrier.wait()
        await self.client.signal_entity(entity, operation, input, **kwargs)


@asynccontextmanager
async def serve_held(hub: RunsHub, *, start_worker: bool = True) -> AsyncIterator[tuple[Served, HeldClient]]:
    """The thread, run and protocol routes on port 0 over ``hub``, through a :class:`HeldClient`; and a worker
    serving the test graphs (none with ``start_worker=False``: a second server of the same hub)."""
    compiled = graphs()
    worker = hub.worker()
    for name, graph in compiled.items():
        register_graph(worker, name, graph)
    held = HeldClient(hub.async_client())
    settings = ServerSettings(project=ProjectConfig(path=Path(__file__).parent / "langgraph.json", graphs={}))
    ctx = ServerContext(client=held, graphs=compiled, settings=settings)  # type: ignore[arg-type]
    async with hosted(application(ctx, threads, runs, protocol), ctx, worker, start_worker=start_worker) as h:
        yield Served(h.url, ctx, h.sdk, h.http, compiled), held


async def status_becomes(s: Served, thread_id: str, run_id: str, wanted: str) -> dict[str, Any]:
    """The run, once its status is ``wanted`` (the test's timeout bounds the wait)."""
    while True:
        run = await s.sdk.runs.get(thread_id, run_id)
        if run["status"] == wanted:
            return dict(run)
        await asyncio.sleep(0.02)
