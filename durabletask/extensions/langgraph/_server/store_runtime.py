"""The store the graphs' nodes get (``runtime.store``): LangGraph's ``BaseStore`` over the entities behind
``/store/items``, so what a node writes on any worker is what a client reads through any server.

Same limits and rules as the HTTP routes (``store_model.py``), and the same ``store.index`` (``store_index.py``):
with one, a put embeds its item and a search's ``query`` ranks by cosine similarity; without one, as LangGraph's
server without ``store.index``, a ``query`` ranks nothing (scores are ``None``) and a put's ``index`` embeds nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Iterable
from datetime import datetime
from typing import Any, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from durabletask.client import TaskHubGrpcClient
from durabletask.extensions.langgraph._server import store_model as model
from durabletask.extensions.langgraph._server.store_index import QUERY_MAX_CHARS, StoreIndex
from durabletask.extensions.langgraph._server.store_items import StoreItems, ThreadedClientHub

T = TypeVar("T")


def _item(record: dict[str, Any]) -> Item:
    return Item(
        value=record["value"],
        key=record["key"],
        namespace=tuple(record["namespace"]),
        created_at=datetime.fromisoformat(record["created_at"]),
        updated_at=datetime.fromisoformat(record["updated_at"]),
    )


def _search_item(record: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(
        value=record["value"],
        key=record["key"],
        namespace=tuple(record["namespace"]),
        created_at=datetime.fromisoformat(record["created_at"]),
        updated_at=datetime.fromisoformat(record["updated_at"]),
        score=score,
    )


def _conditions(op: ListNamespacesOp) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    prefix: tuple[str, ...] | None = None
    suffix: tuple[str, ...] | None = None
    for condition in op.match_conditions or ():
        path = model.check_namespace(list(condition.path), condition.match_type, allow_empty=True)
        if condition.match_type == "prefix":
            prefix = path
        elif condition.match_type == "suffix":
            suffix = path
        else:
            raise model.StoreInputError(f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}")
    return prefix, suffix


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end from synchronous code, on a thread of its own when a loop already runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class DurableStore(BaseStore):
    """LangGraph's ``BaseStore`` on the task hub: one entity per item, shared with ``/store/items``.

    Args:
        client: A synchronous client of the task hub (thread-safe; each call runs in a worker thread).
        index: ``store.index`` loaded (``None``: nothing is embedded, a query ranks nothing).
    """

    supports_ttl = True

    def __init__(self, client: TaskHubGrpcClient, index: StoreIndex | None = None) -> None:
        self._items = StoreItems(ThreadedClientHub(client))
        self._index = index

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (LangGraph's synchronous entry point)."""
        return _run(self.abatch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order."""
        return [await self._one(op) for op in ops]

    async def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            namespace = model.check_namespace(list(op.namespace), "namespace")
            record = await self._items.get(namespace, model.check_key(op.key), refresh_ttl=op.refresh_ttl)
            return _item(record) if record is not None else None
        if isinstance(op, PutOp):
            await self._put(op)
            return None
        if isinstance(op, SearchOp):
            return await self._search(op)
        if isinstance(op, ListNamespacesOp):
            prefix, suffix = _conditions(op)
            found = await self._items.namespaces(
                prefix=prefix, suffix=suffix, max_depth=op.max_depth, limit=op.limit, offset=op.offset
            )
            return [tuple(namespace) for namespace in found]
        raise TypeError(f"unknown store operation {type(op).__name__}")

    async def _put(self, op: PutOp) -> None:
        namespace = model.check_namespace(list(op.namespace), "namespace")
        key = model.check_key(op.key)
        if op.value is None:
            await self._items.delete(namespace, key)
            return
        ttl = model.check_ttl(op.ttl if isinstance(op.ttl, (int, float)) else None)
        value = model.check_value(op.value)
        vectors = None
        if self._index is not None and op.index is not False:
            try:
                vectors = await self._index.embed_value(value, list(op.index) if op.index else None)
            except ValueError as error:
                raise model.StoreInputError(str(error)) from None
        await self._items.put(namespace, key, value, ttl=ttl, vectors=vectors)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = model.check_namespace(list(op.namespace_prefix), "namespace_prefix", allow_empty=True)
        conditions = model.check_filter(op.filter)
        query = None
        if self._index is not None and op.query:
            if len(op.query) > QUERY_MAX_CHARS:
                raise model.StoreInputError(f"query is {len(op.query)} characters long; the limit is {QUERY_MAX_CHARS}")
            query = await self._index.embed_query(op.query)
        found = await self._items.search_scored(
            prefix, filter=conditions, limit=op.limit, offset=op.offset, refresh_ttl=op.refresh_ttl, query=query
        )
        return [_search_item(record, score) for record, score in found]
