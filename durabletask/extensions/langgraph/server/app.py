"""The aiohttp application: every route module's routes behind the middleware (auth, CORS, limits, errors).

Each route module exposes ``routes(ctx: ServerContext) -> list[web.AbstractRouteDef]``.
"""

from __future__ import annotations

from aiohttp import web

from durabletask.extensions.langgraph.server.context import ServerContext

CONTEXT_KEY = web.AppKey("langgraph_server_context", ServerContext)
