"""The store's items in the task hub: put, get, delete, search and namespaces over one entity per item.

Both the HTTP routes (``store.py``) and the graphs' ``BaseStore`` (``store_runtime.py``) go through
:class:`StoreItems`, so an item a node writes is the item a client reads, from any server or worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from durabletask.client import AsyncTaskHubGrpcClient, EntityQuery
from durabletask.extensions.langgraph.server import store_model as model
from durabletask.extensions.langgraph.server.store_records import call_record

_QUERY_PAGE = 500


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
        client: The hub's asyncio client (its loop is the caller's).
    """

    def __init__(self, client: AsyncTaskHubGrpcClient) -> None:
        self._client = client

    async def put(
        self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *, ttl: float | None = None
    ) -> None:
        """Write an item (its ``created_at`` stays that of its first write); ``ttl`` in minutes."""
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
        await call_record(self._client, model.item_entity(namespace, key), "put", record)

    async def delete(self, namespace: Sequence[str], key: str) -> None:
        """Delete an item (nothing happens when there is none)."""
        await call_record(self._client, model.item_entity(namespace, key), "remove", None)

    async def get(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool = True) -> dict[str, Any] | None:
        """The item's record, or ``None`` when there is none (or it expired)."""
        entity = model.item_entity(namespace, key)
        found = await self._client.get_entity(entity, include_state=True)
        record = found.get_typed_state() if found is not None else None
        now = _iso(datetime.now(timezone.utc))
        if not isinstance(record, dict):
            return None
        if not _visible(record, now):
            await self._client.signal_entity(entity, "expire", {"now": now})
            return None
        if list(record["namespace"]) != list(namespace) or record["key"] != key:
            return None
        if refresh_ttl:
            await self._refresh([record])
        return record

    async def _records_under(self, prefix: Sequence[str]) -> list[dict[str, Any]]:
        query = EntityQuery(
            instance_id_starts_with=model.entity_prefix(prefix), include_state=True, page_size=_QUERY_PAGE
        )
        now = _iso(datetime.now(timezone.utc))
        found = await self._client.get_all_entities(query)
        records = [metadata.get_typed_state() for metadata in found]
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
        width = len(prefix)
        chosen = [
            r
            for r in await self._records_under(prefix)
            if tuple(r["namespace"][:width]) == tuple(prefix) and model.matches_filter(r["value"], filter)
        ]
        chosen.sort(key=lambda r: (str(r["namespace"]), r["key"]))
        chosen.sort(key=lambda r: str(r.get("updated_at")), reverse=True)
        selected = chosen[offset : offset + limit]
        if refresh_ttl:
            await self._refresh(selected)
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
            await self._client.signal_entity(entity, "touch", {"expires_at": expires})
