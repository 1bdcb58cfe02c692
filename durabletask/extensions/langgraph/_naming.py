"""Names on the task hub: instance IDs per thread, orchestrator and activity names, the event, the fingerprint."""

from __future__ import annotations

import hashlib
import json
import types
from collections.abc import Callable
from typing import Any

from durabletask.extensions.langgraph._errors import MissingThreadIdError

# DTS caps instance IDs at 100 characters.
MAX_INSTANCE_ID = 100
RUN_EVENT = "lg.run"
_PREFIX = "lg"


def orchestrator_name(graph: str) -> str:
    """The orchestrator that drives every thread of ``graph``: ``lg:{graph}``."""
    return f"{_PREFIX}:{graph}"


def activity_name(graph: str, node: str) -> str:
    """The activity that runs one task of ``node``: ``lg:{graph}:{node}`` (the name work-item filters see)."""
    return f"{_PREFIX}:{graph}:{node}"


def instance_id(graph: str, thread_id: str) -> str:
    """``lg:{graph}:{thread_id}``; past 100 characters the tail becomes a hash of the whole thread ID."""
    plain = f"{_PREFIX}:{graph}:{thread_id}"
    if len(plain) <= MAX_INSTANCE_ID:
        return plain
    digest = hashlib.sha256(thread_id.encode()).hexdigest()[:32]
    head = f"{_PREFIX}:{graph}:"
    room = MAX_INSTANCE_ID - len(head) - len(digest) - 1
    if room < 0:
        raise ValueError(f"graph name '{graph}' is too long: instance IDs are limited to {MAX_INSTANCE_ID} characters")
    return f"{head}{thread_id[:room]}~{digest}"


def thread_id_of(config: Any) -> str:
    """The ``configurable.thread_id`` of a LangGraph config, as a string."""
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if thread_id is None or thread_id == "":
        raise MissingThreadIdError(
            "config['configurable']['thread_id'] is required: each durable run belongs to a thread, "
            "e.g. {'configurable': {'thread_id': 'ticket-42'}}"
        )
    return str(thread_id)


def fingerprint(graph: Any) -> str:
    """A hash of what a compiled graph is made of: nodes, their triggers and channels, edges and channel types.

    Two builds of the same graph have the same fingerprint; adding, removing or rewiring a node changes it.
    Node code is not part of it (a fix inside a node keeps threads running).
    """
    nodes = {
        name: {
            "triggers": sorted(node.triggers),
            "channels": sorted(node.channels) if isinstance(node.channels, list) else str(node.channels),
            "writers": len(node.writers),
        }
        for name, node in graph.nodes.items()
    }
    channels = {name: type(channel).__name__ for name, channel in graph.channels.items()}
    try:
        drawn = graph.get_graph()
        edges = sorted((e.source, e.target, bool(e.conditional)) for e in drawn.edges)
    except Exception:  # drawing needs every branch's type hints; the wiring above still identifies the graph
        edges = []
    shape = {
        "nodes": nodes,
        "channels": channels,
        "edges": edges,
        "input": str(graph.input_channels),
        "output": str(graph.output_channels),
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:16]


def code_identity(graph_name: str, graph_fingerprint: str) -> Callable[..., Any]:
    """A function whose code is the graph's fingerprint, for the SDK's orchestrator code hash.

    The thread orchestrator points ``__wrapped__`` at it, and the client starts threads with that orchestrator,
    so an instance records the graph it was started for and a worker with a changed graph applies its
    ``CodeMismatchPolicy`` (the orchestrator's own source is the same for every graph).
    """
    module = compile(
        f"def graph_shape():\n    return {graph_fingerprint!r}\n", f"<langgraph graph {graph_name!r}>", "exec"
    )
    code = next(const for const in module.co_consts if isinstance(const, types.CodeType))
    return types.FunctionType(code, {})
