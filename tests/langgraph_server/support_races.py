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

import httpx
from aiohttp import web
from langgraph_sdk import get_client

from durabletask.extensions.langgraph import register_graph
from durabletask.extensions.langgraph._server import protocol, runs, threads
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.middleware import middlewares
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
    if start_worker:
        worker.start()
    held = HeldClient(hub.async_client())
    settings = ServerSettings(project=ProjectConfig(path=Path(__file__).parent / "langgraph.json", graphs={}))
    ctx = ServerContext(client=held, graphs=compiled, settings=settings)  # type: ignore[arg-type]
    app = web.Application(middlewares=middlewares(settings), client_max_size=settings.max_body_bytes)
    for module in (threads, runs, protocol):
        app.add_routes(module.routes(ctx))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    sdk = get_client(url=url)
    http = httpx.AsyncClient(base_url=url, timeout=60)
    try:
        yield Served(url, ctx, sdk, http, compiled), held
    finally:
        await http.aclose()
        await sdk.aclose()
        await runner.cleanup()
        await held.client.close()
        if start_worker:
            worker.stop()


async def status_becomes(s: Served, thread_id: str, run_id: str, wanted: str) -> dict[str, Any]:
    """The run, once its status is ``wanted`` (the test's timeout bounds the wait)."""
    while True:
        run = await s.sdk.runs.get(thread_id, run_id)
        if run["status"] == wanted:
            return dict(run)
        await asyncio.sleep(0.02)
