"""The store's routes: ``PUT/GET/DELETE /store/items``, ``POST /store/items/search`` and ``POST /store/namespaces``.

Items live in the task hub (one entity each, see ``store_items.py``); the worker side registers those entities and
the operation orchestrator (``register_worker``).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from durabletask.extensions.langgraph._server import store_model as model
from durabletask.extensions.langgraph._server import store_requests as body_of
from durabletask.extensions.langgraph._server.config import ConfigError
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError, bad_request
from durabletask.extensions.langgraph._server.store_index import (
    QUERY_MAX_CHARS,
    EmbeddingError,
    StoreIndex,
    load_index,
)
from durabletask.extensions.langgraph._server.store_items import StoreItems
from durabletask.extensions.langgraph._server.store_records import (
    RECORD_OPERATION,
    STORE_ENTITY,
    StoreItemRecord,
    record_operation,
)

STORE_KEY = "store"
"""The key of the :class:`StoreItems` in ``ServerContext.extras``."""


def _check_index(index: Any) -> list[str] | bool | None:
    """``index`` on a put: ``false``, ``null`` or a list of field paths, as LangGraph's server takes it. Without
    store.index configured nothing is embedded, so it changes nothing, there as here."""
    if index is None or index is False:
        return index
    if not isinstance(index, list) or not all(isinstance(path, str) and path for path in index) or len(index) > 100:
        raise bad_request("field 'index' must be false, null or a list of at most 100 field paths (strings)")
    return list(index)


async def embed_put(
    index: StoreIndex | None, value: dict[str, Any], paths: list[str] | bool | None
) -> dict[str, list[float]] | None:
    """The vectors a put keeps with its item (``None``: no store.index, or ``index=False``).

    Raises:
        HttpError: 422 for paths or texts the index refuses; 500 naming store.index.embed when it fails.
    """
    if index is None or paths is False:
        return None
    try:
        return await index.embed_value(value, paths if isinstance(paths, list) else None)
    except EmbeddingError as error:
        raise HttpError(500, str(error)) from None
    except ValueError as error:
        raise bad_request(str(error)) from None


async def embed_query(index: StoreIndex | None, query: str | None) -> list[float] | None:
    """The vector a search ranks by (``None``: no store.index, or no query, as LangGraph ranks nothing then)."""
    if index is None or not query:
        return None
    try:
        return await index.embed_query(query)
    except EmbeddingError as error:
        raise HttpError(500, str(error)) from None


def _checked(check: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return check(*args, **kwargs)
    except model.StoreInputError as error:
        raise bad_request(str(error)) from None


def _refresh(body: dict[str, Any]) -> bool:
    flag = body_of.boolean(body, "refresh_ttl")
    return True if flag is None else flag


class _StoreRoutes:
    def __init__(self, items: StoreItems, index: StoreIndex | None) -> None:
        self._items = items
        self._index = index

    async def put(self, request: web.Request) -> web.Response:
        body = await body_of.read_body(request)
        namespace = _checked(model.check_namespace, body.get("namespace"), "namespace")
        key = _checked(model.check_key, body.get("key"))
        value = _checked(model.check_value, body.get("value"))
        ttl = _checked(model.check_ttl, body.get("ttl"))
        vectors = await embed_put(self._index, value, _check_index(body.get("index")))
        await self._items.put(namespace, key, value, ttl=ttl, vectors=vectors)
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
        # embeddings): the items are those the filter finds, each with a null score.
        query = body_of.text(body, "query", max_chars=QUERY_MAX_CHARS)
        limit = body_of.integer(body, "limit", default=10, minimum=1, maximum=body_of.PAGE_MAX)
        offset = body_of.integer(body, "offset", default=0, minimum=0, maximum=body_of.OFFSET_MAX)
        found = await self._items.search_scored(
            prefix,
            filter=conditions,
            limit=limit,
            offset=offset,
            refresh_ttl=_refresh(body),
            query=await embed_query(self._index, query),
        )
        return body_of.json_response(
            {"items": [{**model.item_json(record), "score": score} for record, score in found]}
        )

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
    """The store's routes; installs the context's :class:`StoreItems` under ``STORE_KEY``.

    Raises:
        ConfigError: ``store.index.embed`` cannot be loaded, or embeds a probe text to the wrong shape.
    """
    items = StoreItems(ctx.client)
    ctx.extras[STORE_KEY] = items
    handlers = _StoreRoutes(items, _load(ctx.settings.project))
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


def _load(project: Any) -> StoreIndex | None:
    settings = getattr(project, "store_index", None)
    try:
        return load_index(settings)
    except EmbeddingError as error:
        raise ConfigError(f"{getattr(project, 'path', 'langgraph.json')}: {error}") from None


def check_store_index(project: Any) -> None:
    """Load the project's ``store.index`` (import its function, embed a probe text) and drop it.

    Raises:
        ConfigError: It cannot be loaded, or embeds the probe to the wrong shape; the message names it.
    """
    _load(project)


def node_store(client: Any, project: Any = None) -> Any:
    """The store the graphs' nodes get (``runtime.store``) on a worker: the same items as ``/store/items``.

    Args:
        client: A synchronous ``TaskHubGrpcClient`` of the worker's task hub.
        project: The project (``config.ProjectConfig``): its ``store.index`` embeds and ranks as the routes do.

    Raises:
        ConfigError: ``store.index.embed`` cannot be loaded, or embeds a probe text to the wrong shape.
    """
    from durabletask.extensions.langgraph._server.store_runtime import DurableStore

    return DurableStore(client, index=_load(project))
