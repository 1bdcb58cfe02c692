"""``GET /ok`` and ``GET /info``: the server is up, and what it is (versions, what it serves)."""

from __future__ import annotations

import asyncio
from importlib import metadata
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError

# ``/ok?check_db=1`` asks the task hub; past this many seconds the hub counts as unreachable.
HUB_CHECK_TIMEOUT = 5.0
INFO_KEY = "info_flags"
"""``ctx.extras[INFO_KEY]``: the ``flags`` of ``/info`` (``app.py`` sets which route groups are served)."""


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def info(ctx: ServerContext) -> dict[str, Any]:
    """The body of ``/info``: the shape LangGraph's server answers with, about this server."""
    flags = dict(ctx.extras.get(INFO_KEY, {}))
    flags.setdefault("langsmith", False)
    flags.setdefault("strict_resume", True)  # a resume that answers no waiting interrupt is always refused
    return {
        "version": _version("dtscale"),
        "langgraph_py_version": _version("langgraph"),
        "flags": flags,
        "host": {"kind": "dtscale", "project_id": None, "revision_id": None, "tenant_id": None},
        "task_hub": ctx.settings.task_hub,
        "graphs": sorted(ctx.graphs),
    }


async def _hub_answers(ctx: ServerContext) -> None:
    """One cheap call to the task hub (an instance that does not exist), so ``check_db`` tests the backend."""
    try:
        await asyncio.wait_for(ctx.client.get_orchestration_state("langgraph-server-health"), HUB_CHECK_TIMEOUT)
    except Exception as error:
        raise HttpError(503, f"the task hub does not answer: {type(error).__name__}: {error}") from None


def routes(ctx: ServerContext) -> list[web.AbstractRouteDef]:
    """``/ok`` (``?check_db=1`` also asks the task hub) and ``/info``."""

    async def ok(request: web.Request) -> web.Response:
        check = request.query.get("check_db", "0").lower()
        if check not in ("0", "1", "true", "false"):
            raise HttpError(422, f"check_db must be 0 or 1, got {check!r}")
        if check in ("1", "true"):
            await _hub_answers(ctx)
        return web.json_response({"ok": True})

    async def get_info(request: web.Request) -> web.Response:
        return web.json_response(info(ctx))

    return [web.get("/ok", ok), web.get("/info", get_info)]
