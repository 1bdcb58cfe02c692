"""The store's items in the task hub: put, get, delete, search and namespaces over one entity per item.

Both the HTTP routes (``store.py``) and the graphs' ``BaseStore`` (``store_runtime.py``) go through
:class:`StoreItems`, so an item a node writes is the item a client reads, from any server or worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from durabletask.client import AsyncTaskHubGrpcClient, EntityQuery, TaskHubGrpcClient
from durabletask.entities import EntityInstanceId
from durabletask.extensions.langgraph._server import store_model as model
from durabletask.extensions.langgraph._server.store_index import rank
from durabletask.extensions.langgraph._server.store_records import call_record, call_record_sync

_QUERY_PAGE = 500


class StoreHub(Protocol):
    """How the store reaches the task hub: a waited entity operation, reads, and a signal."""

    async def call(self, entity: EntityInstanceId, operation: str, payload: Any) -> Any:
        """Run an entity operation and wait for its result."""
        ...

    async def read(self, entity: EntityInstanceId) -> Any:
        """The entity's state, or ``None``."""
        ...

    async def read_all(self, prefix: str) -> list[Any]:
        """The states of the entities whose IDs start with ``prefix``."""
        ...

    async def signal(self, entity: EntityInstanceId, operation: str, payload: Any) -> None:
        """Send an operation without waiting for it."""
        ...


def _query(prefix: str) -> EntityQuery:
    return EntityQuery(instance_id_starts_with=prefix, include_state=True, page_size=_QUERY_PAGE)


class AsyncClientHub:
    """:class:`StoreHub` over an asyncio client (used on the loop that made the client)."""

    def __init__(self, client: AsyncTaskHubGrpcClient) -> None:
        self._client = client

    async def call(self, entity: EntityInstanceId, operation: str, payload: Any) -> Any:
        return await call_record(self._client, entity, operation, payload)

    async def read(self, entity: EntityInstanceId) -> Any:
        found = await self._client.get_entity(entity, include_state=True)
        return found.get_typed_state() if found is not None else None

    async def read_all(self, prefix: str) -> list[Any]:
        return [m.get_typed_state() for m in await self._client.get_all_entities(_query(prefix))]

    async def signal(self, entity: EntityInstanceId, operation: str, payload: Any) -> None:
        await self._client.signal_entity(entity, operation, payload)


class ThreadedClientHub:
    """:class:`StoreHub` over a synchronous client, each call in a worker thread: usable from any event loop (a
    graph's node runs on a loop of its own)."""

    def __init__(self, client: TaskHubGrpcClient) -> None:
        self._client = client

    async def call(self, entity: EntityInstanceId, operation: str, payload: Any) -> Any:
        return await asyncio.to_thread(call_record_sync, self._client, entity, operation, payload)

    async def read(self, entity: EntityInstanceId) -> Any:
        found = await asyncio.to_thread(self._client.get_entity, entity, True)
        return found.get_typed_state() if found is not None else None

    async def read_all(self, prefix: str) -> list[Any]:
        found = await asyncio.to_thread(self._client.get_all_entities, _query(prefix))
        return [m.get_typed_state() for m in found]

    async def signal(self, entity: EntityInstanceId, operation: str, payload: Any) -> None:
        await asyncio.to_thread(self._client.signal_entity, entity, operation, payload)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _visible(record: Any, now: str) -> bool:
    if not isinstance(record, dict) or "namespace" not in record or "key" not in record:
        return False
    expires = record.get("expires_at")
    return expires is None or str(expires) > now


class StoreItems:
    """The store over one task hub's entities.

    Args:
        hub: How to reach the task hub: an asyncio client (used on its loop) or a :class:`StoreHub`.
    """

    def __init__(self, hub: AsyncTaskHubGrpcClient | StoreHub) -> None:
        self._hub: StoreHub = AsyncClientHub(hub) if isinstance(hub, AsyncTaskHubGrpcClient) else hub

    async def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
        vectors: Mapping[str, list[float]] | None = None,
    ) -> None:
        """Write an item (its ``created_at`` stays that of its first write); ``ttl`` in minutes; ``vectors``: its
        embeddings by field path (``store.index``), kept with it."""
        moment = datetime.now(timezone.utc)
        now = _iso(moment)
        record = {
            "namespace": list(namespace),
            "key": key,
            "value": dict(value),
            "created_at": now,
            "updated_at": now,
            "ttl": ttl,
            "expires_at": _iso(moment + timedelta(minutes=ttl)) if ttl is not None else None,
        }
        if vectors:
            record["vectors"] = dict(vectors)
        await self._hub.call(model.item_entity(namespace, key), "put", record)

    async def delete(self, namespace: Sequence[str], key: str) -> None:
        """Delete an item (nothing happens when there is none)."""
        await self._hub.call(model.item_entity(namespace, key), "remove", None)

    async def get(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool = True) -> dict[str, Any] | None:
        """The item's record, or ``None`` when there is none (or it expired)."""
        entity = model.item_entity(namespace, key)
        record = await self._hub.read(entity)
        now = _iso(datetime.now(timezone.utc))
        if not isinstance(record, dict):
            return None
        if not _visible(record, now):
            await self._hub.signal(entity, "expire", {"now": now})
            return None
        if list(record["namespace"]) != list(namespace) or record["key"] != key:
            return None
        if refresh_ttl:
            await self._refresh([record])
        return record

    async def _records_under(self, prefix: Sequence[str]) -> list[dict[str, Any]]:
        now = _iso(datetime.now(timezone.utc))
        records = await self._hub.read_all(model.entity_prefix(prefix))
        for expired in (r for r in records if isinstance(r, dict) and "key" in r and not _visible(r, now)):
            await self._hub.signal(model.item_entity(expired["namespace"], expired["key"]), "expire", {"now": now})
        return [r for r in records if _visible(r, now)]

    async def search(
        self,
        prefix: Sequence[str],
        *,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool = True,
    ) -> list[dict[str, Any]]:
        """The items under ``prefix`` whose values pass ``filter``, most recently updated first."""
        found = await self.search_scored(prefix, filter=filter, limit=limit, offset=offset, refresh_ttl=refresh_ttl)
        return [record for record, _ in found]

    async def search_scored(
        self,
        prefix: Sequence[str],
        *,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool = True,
        query: Sequence[float] | None = None,
    ) -> list[tuple[dict[str, Any], float | None]]:
        """:meth:`search` with each item's score: ranked by ``query`` (a vector; see ``store_index.rank``) when
        given, else ``None`` for every item."""
        width = len(prefix)
        chosen = [
            r
            for r in await self._records_under(prefix)
            if tuple(r["namespace"][:width]) == tuple(prefix) and model.matches_filter(r["value"], filter)
        ]
        chosen.sort(key=lambda r: (str(r["namespace"]), r["key"]))
        chosen.sort(key=lambda r: str(r.get("updated_at")), reverse=True)
        if query is not None:
            selected = rank(chosen, query, limit=limit, offset=offset)
        else:
            selected = [(record, None) for record in chosen[offset : offset + limit]]
        if refresh_ttl:
            await self._refresh([record for record, _ in selected])
        return selected

    async def namespaces(
        self,
        *,
        prefix: Sequence[str] | None = None,
        suffix: Sequence[str] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[list[str]]:
        """The distinct namespaces of the items (cut at ``max_depth``) matching ``prefix`` and ``suffix``."""
        records = await self._records_under(prefix or ())
        found = model.list_namespaces(
            (r["namespace"] for r in records), prefix=prefix, suffix=suffix, max_depth=max_depth
        )
        return found[offset : offset + limit]

    async def _refresh(self, records: Sequence[dict[str, Any]]) -> None:
        # A read pushes back the expiry of the items it returns (LangGraph's refresh_on_read); a signal, so the
        # read does not wait for the write.
        moment = datetime.now(timezone.utc)
        for record in records:
            ttl = record.get("ttl")
            if ttl is None:
                continue
            expires = _iso(moment + timedelta(minutes=float(ttl)))
            entity = model.item_entity(record["namespace"], record["key"])
            await self._hub.signal(entity, "touch", {"expires_at": expires})
