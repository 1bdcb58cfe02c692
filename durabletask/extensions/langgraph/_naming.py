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
# A request's "via" and the thread's status name it when results travel on the instance's durable stream.
STREAMED = "stream"
_PREFIX = "lg"


def orchestrator_name(graph: str) -> str:
    """The orchestrator that drives every thread of ``graph``: ``lg:{graph}``.

    Args:
        graph: The graph's name.
    """
    return f"{_PREFIX}:{graph}"


def activity_name(graph: str, node: str) -> str:
    """The activity that runs one task of ``node``: ``lg:{graph}:{node}`` (the name work-item filters see).

    Args:
        graph: The graph's name.
        node: The node's name.
    """
    return f"{_PREFIX}:{graph}:{node}"


# The mark of a hashed instance ID: a plain one never holds it, so the two kinds cannot meet.
_HASH_MARK = "~"
_DIGEST_LENGTH = 32
#: Longest graph name: a hashed instance ID needs room for ``lg:{graph}:``, the mark and the digest.
MAX_GRAPH_NAME = MAX_INSTANCE_ID - len(_PREFIX) - 2 - 1 - _DIGEST_LENGTH


def _printable(text: str) -> bool:
    return all(" " <= ch <= "~" for ch in text)


def check_graph_name(name: object) -> str:
    """``name`` if it can name a graph's orchestrator, activities and instances; else ``ValueError`` saying why."""
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"graph name {name!r}: a non-empty name without ':' is required")
    if not _printable(name):
        raise ValueError(f"graph name {name!r}: only printable ASCII characters can be part of instance IDs")
    if len(name) > MAX_GRAPH_NAME:
        raise ValueError(
            f"graph name {name[:20]!r}... is {len(name)} characters long; the limit is {MAX_GRAPH_NAME}, so that "
            f"every thread's instance ID fits in {MAX_INSTANCE_ID} characters"
        )
    return name


def instance_id(graph: str, thread_id: str) -> str:
    """The instance of the thread ``thread_id`` of ``graph``; distinct threads always get distinct instances.

    ``lg:{graph}:{thread_id}`` when the thread ID is printable ASCII without ``~`` and fits in 100 characters.
    Any other thread ID (longer, non-ASCII, control characters, ``~``) becomes ``lg:{graph}:{prefix}~{digest}``:
    the first 32 hex digits of the SHA-256 of the whole thread ID after a readable prefix of it. A plain ID has
    no ``~`` after the graph's name and a hashed one does, so no thread ID can take another's instance.

    Args:
        graph: The graph's name.
        thread_id: The LangGraph thread ID (``config["configurable"]["thread_id"]``).

    Raises:
        ValueError: ``graph`` cannot name a graph (empty, holds ``:`` or non-printable characters, or too long).
    """
    check_graph_name(graph)
    head = f"{_PREFIX}:{graph}:"
    if _printable(thread_id) and _HASH_MARK not in thread_id and len(head) + len(thread_id) <= MAX_INSTANCE_ID:
        return head + thread_id
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_LENGTH]
    room = MAX_INSTANCE_ID - len(head) - len(_HASH_MARK) - len(digest)
    readable = "".join(ch if " " <= ch <= "~" else "_" for ch in thread_id[:room])
    return f"{head}{readable}{_HASH_MARK}{digest}"


def legacy_instance_id(graph: str, thread_id: str) -> str | None:
    """The instance the mapping before hashed IDs were marked gave this thread, where it differs (a short
    thread ID holding ``~``); ``None`` for every other thread ID."""
    plain = f"{_PREFIX}:{graph}:{thread_id}"
    if _HASH_MARK in thread_id and _printable(thread_id) and len(plain) <= MAX_INSTANCE_ID:
        return plain
    return None


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


def shape(graph: Any) -> dict[str, Any]:
    """What a compiled graph is made of, as JSON: nodes with their triggers and channels, edges and channel types.

    Two builds of the same graph have the same shape; node code is not part of it.
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
    found = {
        "nodes": nodes,
        "channels": channels,
        "edges": edges,
        "input": str(graph.input_channels),
        "output": str(graph.output_channels),
    }
    loaded: dict[str, Any] = json.loads(json.dumps(found, sort_keys=True, default=str))
    return loaded


def shape_fingerprint(graph_shape: dict[str, Any]) -> str:
    """The short hash that names a graph :func:`shape`."""
    return hashlib.sha256(json.dumps(graph_shape, sort_keys=True).encode()).hexdigest()[:16]


def fingerprint(graph: Any) -> str:
    """A hash of the graph's :func:`shape`: adding, removing or rewiring a node changes it; a fix inside one not."""
    return shape_fingerprint(shape(graph))


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
