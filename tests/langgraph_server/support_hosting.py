"""How the server tests host an application: a worker, the aiohttp app on port 0 of loopback, and the clients that
reach it (``langgraph_sdk``'s and a plain ``httpx`` one), all closed again in the reverse order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import ModuleType

import httpx
from aiohttp import web
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from durabletask import worker as dt_worker
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.middleware import middlewares


@dataclass
class Hosted:
    """Where a hosted application listens, and the two clients that reach it."""

    url: str
    sdk: LangGraphClient
    http: httpx.AsyncClient


def application(ctx: ServerContext, *route_modules: ModuleType) -> web.Application:
    """An app with the routes of ``route_modules`` over ``ctx``, behind the server's own middleware and body limit."""
    settings = ctx.settings
    app = web.Application(middlewares=middlewares(settings), client_max_size=settings.max_body_bytes)
    for module in route_modules:
        app.add_routes(module.routes(ctx))
    return app


@asynccontextmanager
async def hosted(
    app: web.Application,
    ctx: ServerContext,
    worker: dt_worker.TaskHubGrpcWorker,
    *,
    start_worker: bool = True,
    http_timeout: float = 60,
) -> AsyncIterator[Hosted]:
    """``app`` served on port 0 of 127.0.0.1 while ``worker`` runs (when ``start_worker``); on exit the clients,
    the server, ``ctx``'s task hub client and the worker are closed, in that order."""
    if start_worker:
        worker.start()
    try:
        runner = web.AppRunner(app)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            url = f"http://127.0.0.1:{runner.addresses[0][1]}"
            sdk = get_client(url=url)
            http = httpx.AsyncClient(base_url=url, timeout=http_timeout)
            try:
                yield Hosted(url, sdk, http)
            finally:
                await http.aclose()
                await sdk.aclose()
        finally:
            await runner.cleanup()
            await ctx.client.close()
    finally:
        if start_worker:
            worker.stop()
