"""The aiohttp application: every route module's routes behind the middleware (auth, CORS, limits, errors).

Each route module exposes ``routes(ctx: ServerContext) -> list[web.AbstractRouteDef]``, and may define
``async def startup(ctx)`` and ``async def cleanup(ctx)`` (run when the application starts and stops) and
``register_worker(worker, project)`` (called on every worker before it starts: the module's entities and
orchestrators) and ``register_firing(worker, project, connect)`` (the same, for activities that need a client
of the hub: ``connect()`` makes an asyncio one). ``ROUTE_MODULES`` is the list, in the order their routes are added.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.middleware import add_cors_headers, middlewares
from durabletask.extensions.langgraph._server.system import INFO_KEY

CONTEXT_KEY = web.AppKey("langgraph_server_context", ServerContext)

_PACKAGE = "durabletask.extensions.langgraph._server"
# The route modules of the server, by their name in this package. A module not written yet is left out.
ROUTE_MODULES = (
    "system",
    "assistants",
    "store",
    "crons",
    "threads",
    "runs",
    "protocol",
)


def route_modules() -> list[ModuleType]:
    """The modules of ``ROUTE_MODULES`` that exist, imported (an error inside one is raised, not skipped)."""
    found = []
    for name in ROUTE_MODULES:
        if importlib.util.find_spec(f"{_PACKAGE}.{name}") is not None:
            found.append(importlib.import_module(f"{_PACKAGE}.{name}"))
    return found


def register_worker_parts(worker: Any, project: Any, connect: Callable[[], Any] | None = None) -> None:
    """Every route module's ``register_worker(worker, project)``: what its records need on a worker; and, given
    ``connect`` (it makes an asyncio client of the worker's hub), its ``register_firing(worker, project, connect)``:
    activities that act on the hub themselves (a cron's firing starts a run)."""
    for module in route_modules():
        hook = getattr(module, "register_worker", None)
        if hook is not None:
            hook(worker, project)
        firing = getattr(module, "register_firing", None)
        if firing is not None and connect is not None:
            firing(worker, project, connect)


def create_app(ctx: ServerContext) -> web.Application:
    """The application serving LangGraph's API from ``ctx``'s task hub."""
    app = web.Application(middlewares=middlewares(ctx.settings), client_max_size=ctx.settings.max_body_bytes)
    app[CONTEXT_KEY] = ctx
    modules = route_modules()
    served = {module.__name__.rsplit(".", 1)[1] for module in modules}
    ctx.extras.setdefault(INFO_KEY, {name: name in served for name in ("assistants", "crons", "store")})
    for module in modules:
        app.add_routes(module.routes(ctx))
        _hook(app, ctx, module, "startup", app.on_startup)
        _hook(app, ctx, module, "cleanup", app.on_cleanup)
    app.on_response_prepare.append(add_cors_headers(ctx.settings.cors))

    async def stopping(_: web.Application) -> None:
        ctx.stopping.set()

    app.on_shutdown.insert(0, stopping)
    return app


def _hook(app: web.Application, ctx: ServerContext, module: ModuleType, name: str, signal: Any) -> None:
    hook = getattr(module, name, None)
    if hook is None:
        return

    async def run(_: web.Application) -> None:
        await hook(ctx)

    signal.append(run)
