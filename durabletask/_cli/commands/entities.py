"""CLI handlers for durable entities: get, list, signal, clean."""

from __future__ import annotations

import argparse
from typing import Any

from durabletask import client as dt_client
from durabletask._cli.arguments import parse_json
from durabletask._cli.render import Renderer
from durabletask.entities import EntityInstanceId


def _entity_id(text: str) -> Any:
    return EntityInstanceId.parse(text)


def _rows(entities: list[Any], with_state: bool) -> list[tuple[Any, ...]]:
    return [
        (
            str(e.id),
            e.last_modified.isoformat() if e.last_modified else "",
            e.backlog_queue_size,
            e.locked_by or "",
            e.serialized_state if with_state else "",
        )
        for e in entities
    ]


def cmd_entity(c: dt_client.TaskHubGrpcClient, a: argparse.Namespace, r: Renderer) -> int:
    action = a.entity_command
    if action == "get":
        entity = c.get_entity(_entity_id(a.entity_id), include_state=not a.no_state)
        if entity is None:
            raise LookupError(f"no entity with ID '{a.entity_id}'")
        entities = [entity]
    elif action == "list":
        query = dt_client.EntityQuery(instance_id_starts_with=a.prefix, include_state=not a.no_state)
        entities = list(c.get_all_entities(query))
    elif action == "signal":
        c.signal_entity(_entity_id(a.entity_id), a.operation, input=parse_json(a.input, "--input"))
        r.json({"action": "signaled", "entity": a.entity_id}) if r.as_json else r.line(
            f"signaled {a.entity_id} {a.operation}"
        )
        return 0
    else:
        result = c.clean_entity_storage(remove_empty_entities=not a.keep_empty, release_orphaned_locks=not a.keep_locks)
        r.json(result) if r.as_json else r.line(
            f"removed {result.empty_entities_removed} empty entities, "
            f"released {result.orphaned_locks_released} orphaned locks"
        )
        return 0
    if r.as_json:
        r.json(entities)
    else:
        r.table(("ENTITY", "LAST MODIFIED", "BACKLOG", "LOCKED BY", "STATE"), _rows(entities, not a.no_state))
    return 0
