"""The assistants' routes: search, count, get, create, update, delete, versions, and the graph, its schemas and its
subgraphs.

Installs the context's assistant resolver (``services.ASSISTANTS_KEY``), which the runs use to find the graph and
the defaults of the assistant a run names.
"""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server import assistants_graph as graph_views
from durabletask.extensions.langgraph._server import store_requests as body_of
from durabletask.extensions.langgraph._server.assistants_records import ASSISTANT_ENTITY, AssistantRecord
from durabletask.extensions.langgraph._server.assistants_service import Assistants
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import bad_request, not_found
from durabletask.extensions.langgraph._server.listing import SearchPage, window
from durabletask.extensions.langgraph._server.services import ASSISTANTS_KEY, THREADS_KEY, ThreadService

SORT_FIELDS = ("assistant_id", "graph_id", "name", "created_at", "updated_at")
SELECT_FIELDS = (
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
)
CONFIG_MAX_BYTES = 64 * 1024
"""The largest ``config``, ``context`` or ``metadata`` of an assistant, in bytes of JSON."""
DESCRIPTION_MAX_CHARS = 4096
"""The longest description of an assistant."""
_GRAPH_ID_MAX_CHARS = 256


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant fields a create or an update body sets (only those present)."""
    found: dict[str, Any] = {}
    graph_id = body_of.text(body, "graph_id", max_chars=_GRAPH_ID_MAX_CHARS, allow_empty=False)
    if graph_id is not None:
        found["graph_id"] = graph_id
    for name in ("config", "context", "metadata"):
        value = body_of.obj(body, name, max_bytes=CONFIG_MAX_BYTES)
        if value is not None:
            found[name] = value
    name_value = body_of.text(body, "name")
    if name_value is not None:
        found["name"] = name_value
    description = body_of.text(body, "description", max_chars=DESCRIPTION_MAX_CHARS)
    if description is not None:
        found["description"] = description
    return found


def _filters(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": body_of.obj(body, "metadata"),
        "graph_id": body_of.text(body, "graph_id", max_chars=_GRAPH_ID_MAX_CHARS),
        "name": body_of.text(body, "name"),
    }


class _AssistantRoutes:
    def __init__(self, ctx: ServerContext, assistants: Assistants) -> None:
        self._ctx = ctx
        self._assistants = assistants

    async def create(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        fields = _fields(body)
        if "graph_id" not in fields:
            raise bad_request("field 'graph_id' is required")
        assistant_id = body_of.text(body, "assistant_id", max_chars=64)
        if assistant_id is not None:
            fields["assistant_id"] = _checked_uuid(assistant_id)
        if_exists = body_of.choice(body, "if_exists", ("raise", "do_nothing"), default="raise")
        record = {"config": {}, "context": {}, "metadata": {}, "name": "Untitled", "description": None, **fields}
        created = await self._assistants.create(record, if_exists=str(if_exists))
        return body_of.json_response(created)

    async def get(self, request: web.Request) -> web.Response:
        return body_of.json_response(await self._assistants.get(request.match_info["assistant_id"]))

    async def update(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        updated = await self._assistants.update(request.match_info["assistant_id"], _fields(body))
        return body_of.json_response(updated)

    async def delete(self, request: web.Request) -> web.Response:
        assistant_id = request.match_info["assistant_id"]
        delete_threads = body_of.query_bool(request, "delete_threads")
        canonical = self._assistants.canonical_id(assistant_id)
        threads: ThreadService | None = self._ctx.extras.get(THREADS_KEY)
        if delete_threads and threads is None:
            raise bad_request("query parameter 'delete_threads': this server has no thread service")
        await self._assistants.delete(assistant_id)
        if delete_threads and threads is not None:
            await self._delete_threads(threads, canonical)
        return web.Response(status=204)

    async def _delete_threads(self, threads: ThreadService, assistant_id: str) -> None:
        while True:
            found = await threads.search(metadata={"assistant_id": assistant_id}, limit=body_of.PAGE_MAX)
            for thread in found:
                await threads.delete(thread["thread_id"])
            if len(found) < body_of.PAGE_MAX:
                return

    async def search(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        page = SearchPage.read(body, SORT_FIELDS, SELECT_FIELDS)
        return page.answer(await self._assistants.matching(**_filters(body)), "assistant_id")

    async def count(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        return body_of.json_response(len(await self._assistants.matching(**_filters(body))))

    async def versions(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        limit, offset = window(body)
        found = await self._assistants.versions(request.match_info["assistant_id"], body_of.obj(body, "metadata"))
        return body_of.json_response(found[offset : offset + limit])

    async def latest(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        if body.get("version") is None:
            raise bad_request("field 'version' is required")
        version = body_of.integer(body, "version", default=1, minimum=1, maximum=2**31 - 1)
        return body_of.json_response(await self._assistants.set_latest(request.match_info["assistant_id"], version))

    async def _graph_of(self, request: web.Request) -> tuple[str, Any, dict[str, Any]]:
        assistant = await self._assistants.get(request.match_info["assistant_id"])
        graph_id = assistant["graph_id"]
        spec = self._ctx.graphs.get(graph_id)
        if spec is None:
            raise not_found(f"graph '{graph_id}' of assistant '{assistant['assistant_id']}' (not in langgraph.json)")
        return graph_id, spec, assistant

    async def graph(self, request: web.Request) -> web.Response:
        xray = graph_views.parse_xray(request.query.get("xray"))
        _, spec, assistant = await self._graph_of(request)
        config = assistant.get("config") or {}
        async with spec.open("assistants.read", config=config, context=assistant.get("context")) as graph:
            return body_of.json_response(graph_views.drawing(graph, config, xray))

    async def schemas(self, request: web.Request) -> web.Response:
        graph_id, spec, assistant = await self._graph_of(request)
        async with spec.open("assistants.read", config=assistant.get("config") or {}) as graph:
            return body_of.json_response(graph_views.schemas(graph_id, graph))

    async def subgraphs(self, request: web.Request) -> web.Response:
        recurse = body_of.query_bool(request, "recurse")
        namespace = request.match_info.get("namespace")
        if namespace is not None and len(namespace) > body_of.TEXT_MAX_CHARS:
            raise bad_request(
                f"the namespace is {len(namespace)} characters long; the limit is {body_of.TEXT_MAX_CHARS}"
            )
        graph_id, spec, assistant = await self._graph_of(request)
        async with spec.open("assistants.read", config=assistant.get("config") or {}) as graph:
            return body_of.json_response(graph_views.subgraphs(graph_id, graph, namespace, recurse))


def _checked_uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise bad_request(f"field 'assistant_id' must be a UUID, got {value[:64]!r}") from None


def routes(ctx: ServerContext) -> list[web.AbstractRouteDef]:
    """The assistants' routes; installs the context's assistant resolver under ``ASSISTANTS_KEY``."""
    assistants = Assistants(ctx.client, ctx.graphs)
    ctx.extras[ASSISTANTS_KEY] = assistants
    handlers = _AssistantRoutes(ctx, assistants)
    return [
        web.post("/assistants", handlers.create),
        web.post("/assistants/search", handlers.search),
        web.post("/assistants/count", handlers.count),
        web.get("/assistants/{assistant_id}", handlers.get),
        web.patch("/assistants/{assistant_id}", handlers.update),
        web.delete("/assistants/{assistant_id}", handlers.delete),
        web.get("/assistants/{assistant_id}/graph", handlers.graph),
        web.get("/assistants/{assistant_id}/schemas", handlers.schemas),
        web.get("/assistants/{assistant_id}/subgraphs", handlers.subgraphs),
        web.get("/assistants/{assistant_id}/subgraphs/{namespace}", handlers.subgraphs),
        web.post("/assistants/{assistant_id}/versions", handlers.versions),
        web.post("/assistants/{assistant_id}/latest", handlers.latest),
    ]


def register_worker(worker: Any, project: Any = None) -> None:
    """Register the assistants' entity on a worker (the store's ``register_worker`` adds the operation
    orchestrator they share).

    Args:
        worker: A ``TaskHubGrpcWorker``.
        project: The project (``config.ProjectConfig``); not needed here.
    """
    worker.add_entity(AssistantRecord, ASSISTANT_ENTITY)
