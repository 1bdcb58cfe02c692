"""The store's routes: ``PUT/GET/DELETE /store/items``, ``POST /store/items/search`` and ``POST /store/namespaces``.

Items live in the task hub (one entity each, see ``store_items.py``); the worker side registers those entities and
the operation orchestrator (``register_worker``).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server import store_model as model
from durabletask.extensions.langgraph._server import store_requests as body_of
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import bad_request
from durabletask.extensions.langgraph._server.store_items import StoreItems
from durabletask.extensions.langgraph._server.store_records import (
    RECORD_OPERATION,
    STORE_ENTITY,
    StoreItemRecord,
    record_operation,
)

STORE_KEY = "store"
"""The key of the :class:`StoreItems` in ``ServerContext.extras``."""


def _check_index(index: Any) -> None:
    """``index`` on a put: ``false``, ``null`` or a list of field paths, as LangGraph's server takes it. Without a
    store.index configured (this server has none) nothing is embedded, so it changes nothing, there as here."""
    if index is None or index is False:
        return
    if not isinstance(index, list) or not all(isinstance(path, str) and path for path in index) or len(index) > 100:
        raise bad_request("field 'index' must be false, null or a list of at most 100 field paths (strings)")


def _checked(check: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return check(*args, **kwargs)
    except model.StoreInputError as error:
        raise bad_request(str(error)) from None


def _refresh(body: dict[str, Any]) -> bool:
    flag = body_of.boolean(body, "refresh_ttl")
    return True if flag is None else flag


class _StoreRoutes:
    def __init__(self, items: StoreItems) -> None:
        self._items = items

    async def put(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        namespace = _checked(model.check_namespace, body.get("namespace"), "namespace")
        key = _checked(model.check_key, body.get("key"))
        value = _checked(model.check_value, body.get("value"))
        ttl = _checked(model.check_ttl, body.get("ttl"))
        _check_index(body.get("index"))
        await self._items.put(namespace, key, value, ttl=ttl)
        return web.Response(status=204)

    async def get(self, request: web.Request) -> web.Response:
        raw_namespace = request.query.get("namespace", "")
        longest = model.NAMESPACE_MAX_LABELS * (model.LABEL_MAX_CHARS + 1)
        if len(raw_namespace) > longest:
            raise bad_request(
                f"query parameter 'namespace' is {len(raw_namespace)} characters long; the limit is {longest}"
            )
        namespace = _checked(model.check_namespace, raw_namespace.split(".") if raw_namespace else [], "namespace")
        key = _checked(model.check_key, request.query.get("key"))
        refresh = body_of.query_bool(request, "refresh_ttl", default=True)
        record = await self._items.get(namespace, key, refresh_ttl=refresh)
        return body_of.json_response(model.item_json(record) if record is not None else None)

    async def delete(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        namespace = _checked(model.check_namespace, body.get("namespace"), "namespace")
        key = _checked(model.check_key, body.get("key"))
        await self._items.delete(namespace, key)
        return web.Response(status=204)

    async def search(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        prefix = _checked(
            model.check_namespace, body.get("namespace_prefix") or [], "namespace_prefix", allow_empty=True
        )
        conditions = _checked(model.check_filter, body.get("filter"))
        # With no store.index configured, LangGraph's server takes a query and ranks nothing by it (its store has no
        # embeddings): the items are those the filter finds, each with a null score. This server has no index.
        body_of.text(body, "query", max_chars=4096)
        limit = body_of.integer(body, "limit", default=10, minimum=1, maximum=body_of.PAGE_MAX)
        offset = body_of.integer(body, "offset", default=0, minimum=0, maximum=body_of.OFFSET_MAX)
        found = await self._items.search(
            prefix, filter=conditions, limit=limit, offset=offset, refresh_ttl=_refresh(body)
        )
        return body_of.json_response({"items": [{**model.item_json(record), "score": None} for record in found]})

    async def namespaces(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        prefix = _checked(model.check_namespace, body.get("prefix") or [], "prefix", allow_empty=True)
        suffix = _checked(model.check_namespace, body.get("suffix") or [], "suffix", allow_empty=True)
        max_depth = None
        if body.get("max_depth") is not None:
            max_depth = body_of.integer(body, "max_depth", default=1, minimum=1, maximum=model.NAMESPACE_MAX_LABELS)
        limit = body_of.integer(body, "limit", default=100, minimum=1, maximum=body_of.PAGE_MAX)
        offset = body_of.integer(body, "offset", default=0, minimum=0, maximum=body_of.OFFSET_MAX)
        found = await self._items.namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )
        return body_of.json_response({"namespaces": found})


def routes(ctx: ServerContext) -> list[web.AbstractRouteDef]:
    """The store's routes; installs the context's :class:`StoreItems` under ``STORE_KEY``."""
    items = StoreItems(ctx.client)
    ctx.extras[STORE_KEY] = items
    handlers = _StoreRoutes(items)
    return [
        web.put("/store/items", handlers.put),
        web.get("/store/items", handlers.get),
        web.delete("/store/items", handlers.delete),
        web.post("/store/items/search", handlers.search),
        web.post("/store/namespaces", handlers.namespaces),
    ]


def register_worker(worker: Any, project: Any = None) -> None:
    """Register the store's entities and the record-operation orchestrator on a worker (before it starts).

    Args:
        worker: A ``TaskHubGrpcWorker``.
        project: The project (``config.ProjectConfig``); the store does not depend on it.
    """
    worker.add_entity(StoreItemRecord, STORE_ENTITY)
    worker.add_orchestrator(record_operation, name=RECORD_OPERATION)


def node_store(client: Any) -> Any:
    """The store the graphs' nodes get (``runtime.store``) on a worker: the same items as ``/store/items``.

    Args:
        client: A synchronous ``TaskHubGrpcClient`` of the worker's task hub.
    """
    from durabletask.extensions.langgraph._server.store_runtime import DurableStore

    return DurableStore(client)
