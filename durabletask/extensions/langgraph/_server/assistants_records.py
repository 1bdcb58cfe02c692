"""Assistants as records: one entity per created assistant with its versions, and the system assistant of each graph.

Every graph of ``langgraph.json`` has a system assistant whose ID is ``uuid5(NAMESPACE_URL, graph_id)``, as
LangGraph's server derives it. It is computed, not stored, until someone changes it: an update writes it to its
entity like any other assistant. Times and the new version number are decided inside the entity's operation, from
the time the server sends with it, so two servers updating one assistant never make the same version twice.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from durabletask.entities import DurableEntity, EntityInstanceId

ASSISTANT_ENTITY = "lgs.assistant"
"""The entity holding one assistant and its versions."""
SYSTEM_CREATED_AT = "1970-01-01T00:00:00.000000+00:00"
"""The creation time reported for a system assistant nobody changed (it is computed, so every server agrees)."""
VERSIONS_MAX_BYTES = 512 * 1024
"""The versions an assistant keeps, newest first, in bytes of JSON (older ones are dropped past it)."""
FIELDS = ("assistant_id", "graph_id", "config", "context", "metadata", "name", "description", "version")
"""The fields a version has; an assistant has them and ``created_at`` / ``updated_at``."""


def system_assistant_id(graph_id: str) -> str:
    """The system assistant's ID of a graph, as LangGraph's server makes it."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, graph_id))


def system_assistant(graph_id: str, description: str | None = None) -> dict[str, Any]:
    """The system assistant of a graph, as it is before anyone changes it."""
    return {
        "assistant_id": system_assistant_id(graph_id),
        "graph_id": graph_id,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "name": graph_id,
        "description": description,
        "version": 1,
        "created_at": SYSTEM_CREATED_AT,
        "updated_at": SYSTEM_CREATED_AT,
    }


def entity_of(assistant_id: str) -> EntityInstanceId:
    """The entity of an assistant (its ID is a UUID, so the entity ID stays short)."""
    return EntityInstanceId(ASSISTANT_ENTITY, assistant_id)


def as_version(assistant: Mapping[str, Any], created_at: str) -> dict[str, Any]:
    """One version of an assistant: its fields and when that version was made."""
    version = {name: assistant.get(name) for name in FIELDS}
    version["created_at"] = created_at
    return version


def _trimmed(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    size = 0
    for version in sorted(versions, key=lambda v: int(v["version"]), reverse=True):
        size += len(json.dumps(version, default=str))
        if kept and size > VERSIONS_MAX_BYTES:
            break
        kept.append(version)
    return kept


class AssistantRecord(DurableEntity):
    """One assistant: ``{"assistant": {...}, "versions": [...]}``; every change is a new version."""

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        """Store ``request["assistant"]`` unless the assistant exists; says which happened and returns it."""
        current = self.get_state(dict)
        if isinstance(current, dict):
            return {"created": False, "assistant": current["assistant"]}
        assistant = request["assistant"]
        self.set_state({"assistant": assistant, "versions": [as_version(assistant, assistant["created_at"])]})
        return {"created": True, "assistant": assistant}

    def _current(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The stored assistant and its versions, else those of ``request["base"]`` (the system assistant it
        starts from), else ``None``."""
        current = self.get_state(dict)
        if isinstance(current, dict):
            return current
        base = request.get("base")
        if not isinstance(base, dict):
            return None
        return {"assistant": base, "versions": [as_version(base, base["created_at"])]}

    def update(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Apply ``request["changes"]`` as a new version (metadata merged); ``None`` when there is no assistant.

        ``request["base"]`` is the system assistant to start from when the entity has none yet.
        """
        current = self._current(request)
        if current is None:
            return None
        changes = dict(request["changes"])
        assistant = dict(current["assistant"])
        if "metadata" in changes:
            assistant["metadata"] = {**(assistant.get("metadata") or {}), **changes.pop("metadata")}
        assistant.update(changes)
        assistant["version"] = max(int(v["version"]) for v in current["versions"]) + 1
        assistant["updated_at"] = request["now"]
        versions = _trimmed([*current["versions"], as_version(assistant, request["now"])])
        self.set_state({"assistant": assistant, "versions": versions})
        return assistant

    def set_latest(self, request: dict[str, Any]) -> dict[str, Any]:
        """Make an earlier version the current one; ``{"missing": ...}`` when there is no such assistant/version."""
        current = self._current(request)
        if current is None:
            return {"missing": "assistant"}
        wanted = [v for v in current["versions"] if int(v["version"]) == int(request["version"])]
        if not wanted:
            return {"missing": "version"}
        assistant = {**current["assistant"], **{name: wanted[0].get(name) for name in FIELDS}}
        assistant["updated_at"] = request["now"]
        self.set_state({"assistant": assistant, "versions": current["versions"]})
        return {"assistant": assistant}

    def remove(self, _: Any = None) -> bool:
        """Delete the assistant and its versions; whether there was one."""
        existed = isinstance(self.get_state(dict), dict)
        self.set_state(None)
        return existed
