"""The thread routes: ``/threads`` (create, get, update, delete, search, count, copy, prune), state and history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._records import register_records
from durabletask.extensions.langgraph._server.config_webhooks import WebhookSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import bad_request
from durabletask.extensions.langgraph._server.runs_body import bounded_metadata
from durabletask.extensions.langgraph._server.runs_service import RunServiceImpl
from durabletask.extensions.langgraph._server.services import RUNS_KEY, THREADS_KEY
from durabletask.extensions.langgraph._server.state import select_state
from durabletask.extensions.langgraph._server.threads_http import (
    answer,
    choice,
    count,
    field,
    flag,
    no_content,
    read_body,
    strings,
)
from durabletask.extensions.langgraph._server.threads_service import ThreadServiceImpl
from durabletask.extensions.langgraph._server.threads_ttl import parse_ttl, register_expiry, ttl_json
from durabletask.extensions.langgraph._server.webhooks import register_webhooks


def install(ctx: ServerContext) -> ThreadServiceImpl:
    """The context's thread service (and run service), made on first use."""
    if THREADS_KEY not in ctx.extras:
        ctx.extras[THREADS_KEY] = ThreadServiceImpl(ctx)
    threads: ThreadServiceImpl = ctx.extras[THREADS_KEY]
    ctx.extras.setdefault(RUNS_KEY, RunServiceImpl(ctx, threads))
    return threads


def register_worker(worker: Any, project: Any) -> None:
    """The threads' record entity, and the delivery of runs' webhooks, on every worker of the project."""
    register_records(worker)
    register_webhooks(worker, getattr(project, "webhooks", None) or WebhookSettings())


def register_firing(worker: Any, project: Any, connect: Callable[[], Any]) -> None:
    """The expiry of threads whose TTL ran out: it reaches the hub with a client from ``connect()``."""
    register_expiry(worker, project, connect)


def routes(ctx: ServerContext) -> list[web.AbstractRouteDef]:
    """The thread routes."""
    threads = install(ctx)

    async def create(request: web.Request) -> web.Response:
        body = await read_body(request, required=False)
        supersteps = field(body, "supersteps", list)
        if supersteps is not None and not all(isinstance(s, dict) for s in supersteps):
            raise bad_request("'supersteps' must be a list of objects with 'updates'")
        made = await threads.create(
            thread_id=field(body, "thread_id", str),
            metadata=bounded_metadata(body.get("metadata")),
            if_exists=choice(body, "if_exists", ("raise", "do_nothing"), "raise"),
            supersteps=supersteps,
            graph_id=field(body, "graph_id", str),
            ttl=parse_ttl(body),
        )
        return answer(made)

    async def get(request: web.Request) -> web.Response:
        return answer(await _thread(threads, request.match_info["thread_id"], _include(request)))

    async def patch(request: web.Request) -> web.Response:
        body = await read_body(request, required=False)
        updated = await threads.update(
            request.match_info["thread_id"], metadata=bounded_metadata(body.get("metadata")), ttl=parse_ttl(body)
        )
        if "return=minimal" in request.headers.get("Prefer", ""):
            return no_content()
        return answer(updated)

    async def delete(request: web.Request) -> web.Response:
        await threads.delete(request.match_info["thread_id"])
        return no_content()

    async def search(request: web.Request) -> web.Response:
        body = await read_body(request, required=False)
        found = await threads.search(
            metadata=field(body, "metadata", dict),
            values=field(body, "values", dict),
            ids=strings(body, "ids"),
            status=choice(body, "status", ("idle", "busy", "interrupted", "error")),
            limit=count(body.get("limit"), "limit", 10),
            offset=count(body.get("offset"), "offset", 0, high=1 << 31),
            sort_by=field(body, "sort_by", str),
            sort_order=field(body, "sort_order", str),
            select=strings(body, "select"),
            extract=field(body, "extract", dict),
        )
        return answer(found)

    async def count_threads(request: web.Request) -> web.Response:
        body = await read_body(request, required=False)
        found = await threads.count(
            metadata=field(body, "metadata", dict),
            values=field(body, "values", dict),
            status=choice(body, "status", ("idle", "busy", "interrupted", "error")),
        )
        return answer(found)

    async def copy(request: web.Request) -> web.Response:
        return answer(await threads.copy(request.match_info["thread_id"]))

    async def prune(request: web.Request) -> web.Response:
        body = await read_body(request)
        ids = strings(body, "thread_ids")
        if ids is None:
            raise bad_request("'thread_ids' is required: a list of thread IDs")
        strategy = choice(body, "strategy", ("delete", "keep_latest"), "delete")
        return answer({"pruned_count": await threads.prune(ids, strategy=strategy)})

    return [
        web.post("/threads", create),
        web.post("/threads/search", search),
        web.post("/threads/count", count_threads),
        web.post("/threads/prune", prune),
        web.get("/threads/{thread_id}", get),
        web.patch("/threads/{thread_id}", patch),
        web.delete("/threads/{thread_id}", delete),
        web.post("/threads/{thread_id}/copy", copy),
        *state_routes(threads),
    ]


async def _thread(threads: ThreadServiceImpl, thread_id: str, include: set[str]) -> dict[str, Any]:
    found = await threads.get(thread_id)
    if "ttl" in include and (ttl := ttl_json(await threads.record(thread_id))) is not None:
        found["ttl"] = ttl
    return found


def _include(request: web.Request) -> set[str]:
    """``?include=``: the optional fields of a thread asked for (LangGraph's server knows ``ttl``)."""
    include = {f.strip() for f in request.query.get("include", "").split(",") if f.strip()}
    unknown = sorted(include - {"ttl"})
    if unknown:
        raise bad_request(f"'include' names {unknown[0]!r}; the fields that can be included: ttl")
    return include


def state_routes(threads: ThreadServiceImpl) -> list[web.AbstractRouteDef]:
    """The routes of a thread's state: read (also at a checkpoint), update, history."""

    async def get_state(request: web.Request) -> web.Response:
        subgraphs = flag(request.query.get("subgraphs"), "subgraphs")
        checkpoint_id = request.match_info.get("checkpoint_id")
        checkpoint = {"checkpoint_id": checkpoint_id} if checkpoint_id else None
        select = [f for f in request.query.getall("select", []) if f] or None
        state = await threads.get_state(request.match_info["thread_id"], checkpoint=checkpoint, subgraphs=subgraphs)
        return answer(select_state(state, select))

    async def post_state_checkpoint(request: web.Request) -> web.Response:
        body = await read_body(request)
        checkpoint = field(body, "checkpoint", dict)
        if checkpoint is None:
            raise bad_request("'checkpoint' is required: an object with 'checkpoint_id'")
        subgraphs = flag(body.get("subgraphs"), "subgraphs")
        state = await threads.get_state(request.match_info["thread_id"], checkpoint=checkpoint, subgraphs=subgraphs)
        return answer(select_state(state, strings(body, "select")))

    async def update_state(request: web.Request) -> web.Response:
        body = await read_body(request)
        checkpoint = field(body, "checkpoint", dict)
        checkpoint_id = field(body, "checkpoint_id", str)
        if checkpoint_id:
            checkpoint = {**(checkpoint or {}), "checkpoint_id": checkpoint_id}
        updated = await threads.update_state(
            request.match_info["thread_id"],
            body.get("values"),
            as_node=field(body, "as_node", str),
            checkpoint=checkpoint,
        )
        return answer(updated)

    async def history(request: web.Request) -> web.Response:
        body = await read_body(request, required=False)
        found = await threads.history(
            request.match_info["thread_id"],
            limit=count(body.get("limit"), "limit", 10),
            before=_checkpoint_or_id(body, "before"),
            metadata=field(body, "metadata", dict),
            checkpoint=field(body, "checkpoint", dict),
        )
        return answer(found)

    return [
        web.get("/threads/{thread_id}/state", get_state),
        web.post("/threads/{thread_id}/state", update_state),
        web.post("/threads/{thread_id}/state/checkpoint", post_state_checkpoint),
        web.get("/threads/{thread_id}/state/{checkpoint_id}", get_state),
        web.post("/threads/{thread_id}/history", history),
    ]


def _checkpoint_or_id(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return {"checkpoint_id": value}
    if not isinstance(value, dict):
        raise bad_request(f"'{name}' must be a checkpoint object or a checkpoint ID")
    return value
