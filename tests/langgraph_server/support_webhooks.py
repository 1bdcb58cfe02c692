"""What the webhook and TTL tests share: a real HTTP receiver for webhooks, and a server whose worker also runs the
threads' worker parts (webhook delivery, TTL expiry) for a project with webhook settings."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph import register_graph
from durabletask.extensions.langgraph._server import runs, threads
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.config_webhooks import WebhookSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from tests.langgraph_server.support_hosting import application, hosted
from tests.langgraph_server.support_runs import RunsHub, Served, graphs

#: The settings of the tests' project: the receiver listens on loopback, which LangGraph's defaults refuse.
LOOPBACK_ALLOWED = WebhookSettings(disable_loopback=False)


@dataclass
class Receiver:
    """A local HTTP endpoint that records each POST; ``mode`` says how it answers: ``ok`` (200), ``fail`` (500),
    ``hang`` (no answer until ``release`` is set)."""

    mode: str = "ok"
    posts: list[dict[str, Any]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        async with self.arrived:
            self.posts.append({"path": request.path, "headers": dict(request.headers), "json": json.loads(body)})
            self.arrived.notify_all()
        if self.mode == "hang":
            await self.release.wait()
        return web.Response(status=500 if self.mode == "fail" else 200, text="ok")

    async def wait_for(self, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        """The POSTs once at least ``count`` have arrived."""
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.posts) >= count), timeout)
        return list(self.posts)


@asynccontextmanager
async def receiver(mode: str = "ok") -> AsyncIterator[Receiver]:
    """A :class:`Receiver` listening on 127.0.0.1 (``url`` ends in ``/hook``)."""
    found = Receiver(mode=mode)
    app = web.Application()
    app.router.add_post("/hook", found.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    found.url = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
    try:
        yield found
    finally:
        found.release.set()
        await runner.cleanup()


def project(webhooks: WebhookSettings = LOOPBACK_ALLOWED) -> ProjectConfig:
    """The tests' project: the run tests' graphs, compiled, and ``webhooks``."""
    return ProjectConfig(path=Path(__file__).parent / "langgraph.json", graphs=graphs(), webhooks=webhooks)


def worker_for(hub: RunsHub, config: ProjectConfig) -> Any:
    """A worker of ``hub`` serving the graphs and the threads' worker parts (not started)."""
    w = hub.worker()
    for name, graph in config.graphs.items():
        register_graph(w, name, graph)
    threads.register_worker(w, config)
    threads.register_firing(w, config, hub.async_client)
    return w


@asynccontextmanager
async def serve(
    hub: RunsHub, config: ProjectConfig | None = None, *, start_worker: bool = True
) -> AsyncIterator[Served]:
    """The thread and run routes on port 0 over ``hub`` for ``config``, and (``start_worker``) a worker for it."""
    config = config or project()
    w = worker_for(hub, config)
    client = hub.async_client()
    settings = ServerSettings(project=config)
    ctx = ServerContext(client=client, graphs=dict(config.graphs), settings=settings)
    async with hosted(application(ctx, threads, runs), ctx, w, start_worker=start_worker) as h:
        yield Served(h.url, ctx, h.sdk, h.http, dict(config.graphs))
