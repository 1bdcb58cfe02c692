"""LangGraph's values, snapshots and checkpoints as the JSON LangGraph's server answers with.

Messages and other pydantic models become their ``model_dump()``, dataclasses (``Interrupt``, ``Send``) their
fields, tuples and sets lists; a ``StateSnapshot`` becomes the SDK's ``ThreadState``.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from collections.abc import Mapping
from typing import Any

from durabletask.extensions.langgraph._server.errors import bad_request


def to_json(value: Any) -> Any:
    """``value`` as JSON-ready data (dicts, lists, strings, numbers, booleans, ``None``)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    return _object(value)


def _object(value: Any) -> Any:
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return to_json(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name != "response_schema"
        }
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, enum.Enum)):
        return str(value.value if isinstance(value, enum.Enum) else value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "_asdict"):
        return to_json(value._asdict())
    if hasattr(value, "__dict__"):
        return to_json({k: v for k, v in vars(value).items() if not k.startswith("_")})
    return repr(value)


def interrupt_json(interrupt: Any) -> dict[str, Any]:
    """An ``Interrupt`` as the SDK reads it: ``{"value", "id"}``."""
    return {"value": to_json(getattr(interrupt, "value", None)), "id": str(getattr(interrupt, "id", ""))}


def checkpoint_json(config: Any) -> dict[str, Any] | None:
    """A checkpoint's coordinates (``thread_id``, ``checkpoint_ns``, ``checkpoint_id``) from its config."""
    if not config:
        return None
    conf = config.get("configurable") or {}
    if not conf.get("checkpoint_id"):
        return None
    return {
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
        "checkpoint_map": to_json(conf.get("checkpoint_map")) if conf.get("checkpoint_map") else None,
    }


def _task_json(task: Any) -> dict[str, Any]:
    # A subgraph task's state is its snapshot (read with subgraphs=True), or else the config that names it.
    sub = task.state
    named = isinstance(sub, Mapping)
    nested = snapshot_json(sub) if sub is not None and not named else None
    return {
        "id": task.id,
        "name": task.name,
        "path": to_json(task.path),
        "error": None if task.error is None else str(task.error),
        "interrupts": [interrupt_json(i) for i in task.interrupts],
        "checkpoint": to_json(sub.get("configurable")) if named else None,
        "state": nested,
        "result": to_json(task.result),
    }


def snapshot_json(snapshot: Any) -> dict[str, Any]:
    """A ``StateSnapshot`` as the SDK's ``ThreadState``."""
    checkpoint = checkpoint_json(snapshot.config)
    parent = checkpoint_json(snapshot.parent_config)
    return {
        "values": to_json(snapshot.values),
        "next": list(snapshot.next),
        "tasks": [_task_json(task) for task in snapshot.tasks],
        "metadata": to_json(snapshot.metadata),
        "created_at": snapshot.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "checkpoint_id": (checkpoint or {}).get("checkpoint_id"),
        "parent_checkpoint_id": (parent or {}).get("checkpoint_id"),
        "interrupts": [interrupt_json(i) for i in getattr(snapshot, "interrupts", ())],
    }


def empty_state(thread_id: str) -> dict[str, Any]:
    """The state of a thread that has no checkpoint yet (as LangGraph's ``get_state`` gives it)."""
    return {
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": None,
        "created_at": None,
        "checkpoint": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None, "checkpoint_map": None},
        "parent_checkpoint": None,
        "checkpoint_id": None,
        "parent_checkpoint_id": None,
        "interrupts": [],
    }


def checkpoint_id_of(checkpoint: Mapping[str, Any] | None, field: str = "checkpoint") -> str | None:
    """The ``checkpoint_id`` a request's checkpoint object names (422 when it is malformed)."""
    if checkpoint is None:
        return None
    if not isinstance(checkpoint, Mapping):
        raise bad_request(f"'{field}' must be an object with 'checkpoint_id', not {type(checkpoint).__name__}")
    ns = checkpoint.get("checkpoint_ns")
    if ns not in (None, ""):
        raise bad_request(f"'{field}.checkpoint_ns' {ns!r}: only the root graph's namespace ('') is supported")
    found = checkpoint.get("checkpoint_id")
    if found is not None and not isinstance(found, str):
        raise bad_request(f"'{field}.checkpoint_id' must be a string, not {type(found).__name__}")
    return found or None


def command_of(command: Mapping[str, Any]) -> Any:
    """A ``Command`` of the SDK (``resume``, ``update``, ``goto`` as a node, a ``Send`` or a list) as LangGraph's."""
    from langgraph.types import Command, Send

    def target(goto: Any) -> Any:
        if isinstance(goto, Mapping):
            if not isinstance(goto.get("node"), str):
                raise bad_request("'command.goto' as an object is a Send: it needs 'node' (a string) and 'input'")
            return Send(goto["node"], goto.get("input"))
        return goto

    goto = command.get("goto")
    goto = [target(g) for g in goto] if isinstance(goto, list) else target(goto)
    return Command(resume=command.get("resume"), update=command.get("update"), goto=goto or ())


STATE_FIELDS = ("values", "next", "tasks", "checkpoint", "metadata", "created_at", "parent_checkpoint", "interrupts")


def select_state(state: dict[str, Any], select: list[str] | None) -> dict[str, Any]:
    """Only the ``select`` ed fields of a ``ThreadState`` (``values.<key>``: that key of the values)."""
    if not select:
        return state
    out: dict[str, Any] = {}
    for name in select:
        head, _, key = name.partition(".")
        if head not in STATE_FIELDS or (key and head != "values"):
            raise bad_request(f"'select' field {name!r} is unknown; known: {', '.join(STATE_FIELDS)}, values.<key>")
        if key:
            values = state.get("values")
            part = out.setdefault("values", {})
            if isinstance(values, dict) and isinstance(part, dict) and key in values:
                part[key] = values[key]
        else:
            out[head] = state.get(head)
    return out
