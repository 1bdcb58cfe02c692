"""Assistants in the task hub: find, list, create, change and delete them, and resolve the one a run names.

Created assistants are entities (``assistants_records.py``), so every server sees the same ones; system assistants
are computed from ``langgraph.json``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from durabletask.client import AsyncTaskHubGrpcClient, EntityQuery
from durabletask.extensions.langgraph._server import assistants_records as records
from durabletask.extensions.langgraph._server.errors import bad_request, conflict, not_found
from durabletask.extensions.langgraph._server.services import ResolvedAssistant
from durabletask.extensions.langgraph._server.store_records import call_record
from durabletask.extensions.langgraph._server.store_requests import contains, now_iso

ASSISTANT_ID_MAX_CHARS = 256
"""The longest assistant ID (or graph ID) accepted in a path."""


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


class Assistants:
    """The assistants of one project over one task hub.

    Args:
        client: The hub's asyncio client.
        graphs: The project's graphs by graph ID (their ``description`` is the system assistant's).
    """

    def __init__(self, client: AsyncTaskHubGrpcClient, graphs: Mapping[str, Any]) -> None:
        self._client = client
        self._graphs = graphs
        self._system = {
            records.system_assistant_id(graph_id): records.system_assistant(
                graph_id, getattr(spec, "description", None)
            )
            for graph_id, spec in graphs.items()
        }

    def system_of(self, assistant_id: str) -> dict[str, Any] | None:
        """The computed system assistant with this ID (or of this graph ID), if there is one."""
        if assistant_id in self._graphs:
            assistant_id = records.system_assistant_id(assistant_id)
        return self._system.get(assistant_id)

    def canonical_id(self, assistant_id: str) -> str:
        """The assistant's UUID: the ID itself, or the system assistant's of a graph ID.

        Raises:
            HttpError: 404 when it is neither a UUID nor a graph of ``langgraph.json``.
        """
        if len(assistant_id) > ASSISTANT_ID_MAX_CHARS:
            raise bad_request(
                f"the assistant ID is {len(assistant_id)} characters long; the limit is {ASSISTANT_ID_MAX_CHARS}"
            )
        if assistant_id in self._graphs:
            return records.system_assistant_id(assistant_id)
        canonical = _uuid(assistant_id)
        if canonical is None:
            raise not_found(f"assistant '{assistant_id}' (neither an assistant's UUID nor a graph ID)")
        return canonical

    async def _stored(self, assistant_id: str) -> dict[str, Any] | None:
        found = await self._client.get_entity(records.entity_of(assistant_id), include_state=True)
        state = found.get_typed_state() if found is not None else None
        return state if isinstance(state, dict) and isinstance(state.get("assistant"), dict) else None

    async def get(self, assistant_id: str) -> dict[str, Any]:
        """The assistant (``Assistant``); 404 when there is none."""
        canonical = self.canonical_id(assistant_id)
        stored = await self._stored(canonical)
        if stored is not None:
            return dict(stored["assistant"])
        system = self._system.get(canonical)
        if system is None:
            raise not_found(f"assistant '{assistant_id}'")
        return dict(system)

    async def resolve(self, assistant_id: str) -> ResolvedAssistant:
        assistant = await self.get(assistant_id)
        if assistant["graph_id"] not in self._graphs:
            raise not_found(f"graph '{assistant['graph_id']}' of assistant '{assistant_id}' (not in langgraph.json)")
        return ResolvedAssistant(
            assistant_id=assistant["assistant_id"],
            graph_id=assistant["graph_id"],
            config=assistant.get("config") or {},
            context=assistant.get("context") or {},
        )

    async def all(self) -> list[dict[str, Any]]:
        """Every assistant: the stored ones, then the system ones nobody changed."""
        query = EntityQuery(instance_id_starts_with=f"@{records.ASSISTANT_ENTITY}@", include_state=True)
        stored = [metadata.get_typed_state() for metadata in await self._client.get_all_entities(query)]
        found = {
            s["assistant"]["assistant_id"]: s["assistant"]
            for s in stored
            if isinstance(s, dict) and isinstance(s.get("assistant"), dict)
        }
        for assistant_id, system in self._system.items():
            found.setdefault(assistant_id, system)
        return list(found.values())

    async def matching(
        self, *, metadata: Mapping[str, Any] | None, graph_id: str | None, name: str | None
    ) -> list[dict[str, Any]]:
        """The assistants passing every filter: metadata containment, graph ID, name substring (any case)."""
        wanted = name.lower() if name else None
        return [
            a
            for a in await self.all()
            if (graph_id is None or a.get("graph_id") == graph_id)
            and (not metadata or contains(a.get("metadata") or {}, dict(metadata)))
            and (wanted is None or wanted in str(a.get("name") or "").lower())
        ]

    async def create(self, fields: dict[str, Any], *, if_exists: str) -> dict[str, Any]:
        """Create an assistant from validated fields; 409 (or the existing one) when its ID is taken."""
        self._check_graph(fields["graph_id"])
        assistant_id = fields.get("assistant_id") or str(uuid.uuid4())
        if assistant_id in self._system:
            if if_exists == "do_nothing":
                return await self.get(assistant_id)
            raise conflict(f"assistant '{assistant_id}' exists: it is the system assistant of a graph")
        now = now_iso()
        assistant = {**fields, "assistant_id": assistant_id, "version": 1, "created_at": now, "updated_at": now}
        outcome = await call_record(self._client, records.entity_of(assistant_id), "create", {"assistant": assistant})
        if not outcome["created"] and if_exists != "do_nothing":
            raise conflict(f"assistant '{assistant_id}' exists")
        return dict(outcome["assistant"])

    def _check_graph(self, graph_id: str) -> None:
        if graph_id not in self._graphs:
            raise not_found(f"graph '{graph_id}' (langgraph.json has: {', '.join(sorted(self._graphs))})")

    async def update(self, assistant_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        """A new version with ``changes`` (metadata merged into the assistant's); 404 when there is none."""
        canonical = self.canonical_id(assistant_id)
        if changes.get("graph_id") is not None:
            self._check_graph(changes["graph_id"])
        request = {"changes": changes, "now": now_iso(), "base": self._system.get(canonical)}
        updated = await call_record(self._client, records.entity_of(canonical), "update", request)
        if updated is None:
            raise not_found(f"assistant '{assistant_id}'")
        return dict(updated)

    async def delete(self, assistant_id: str) -> None:
        """Delete an assistant and its versions (404 when there is none; 409 for a system assistant)."""
        canonical = self.canonical_id(assistant_id)
        if canonical in self._system:
            graph_id = self._system[canonical]["graph_id"]
            raise conflict(
                f"assistant '{assistant_id}' is the system assistant of graph '{graph_id}' of "
                "langgraph.json: it exists as long as the graph does"
            )
        if not await call_record(self._client, records.entity_of(canonical), "remove", None):
            raise not_found(f"assistant '{assistant_id}'")

    async def versions(self, assistant_id: str, metadata: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """The assistant's versions, newest first, whose metadata contains ``metadata``."""
        canonical = self.canonical_id(assistant_id)
        stored = await self._stored(canonical)
        if stored is not None:
            found = list(stored["versions"])
        elif canonical in self._system:
            system = self._system[canonical]
            found = [records.as_version(system, system["created_at"])]
        else:
            raise not_found(f"assistant '{assistant_id}'")
        found.sort(key=lambda v: int(v["version"]), reverse=True)
        return [v for v in found if not metadata or contains(v.get("metadata") or {}, dict(metadata))]

    async def set_latest(self, assistant_id: str, version: int) -> dict[str, Any]:
        """Make ``version`` the assistant's current one; 404 when the assistant or the version is missing."""
        canonical = self.canonical_id(assistant_id)
        request = {"version": version, "now": now_iso(), "base": self._system.get(canonical)}
        outcome = await call_record(self._client, records.entity_of(canonical), "set_latest", request)
        if "missing" in outcome:
            what = f"version {version} of assistant" if outcome["missing"] == "version" else "assistant"
            raise not_found(f"{what} '{assistant_id}'")
        return dict(outcome["assistant"])
