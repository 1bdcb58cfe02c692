"""``register_graph``: a compiled graph's orchestrator and node activities on a worker."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from durabletask.extensions.langgraph import _internals as lg
from durabletask.extensions.langgraph._activity import task_activity
from durabletask.extensions.langgraph._naming import activity_name, check_graph_name, fingerprint, orchestrator_name
from durabletask.extensions.langgraph._orchestrator import thread_orchestrator
from durabletask.extensions.langgraph._records import register_records
from durabletask.streams import DEFAULT_MAX_INSTANCE_BYTES


def register_graph(
    worker: Any, name: str, graph: Any, *, nodes: Iterable[str] | None = None, orchestrator: bool = True
) -> None:
    """Register ``graph`` on ``worker`` under ``name`` (before ``worker.start()``).

    Registers the orchestrator ``lg:{name}`` that drives the graph's threads, and one activity
    ``lg:{name}:{node}`` per node that runs that node's tasks.

    Args:
        worker: A ``TaskHubGrpcWorker``.
        name: The graph's name on the task hub; clients use the same name in :class:`DurableGraph`.
        graph: A compiled graph without a checkpointer (DTS history is the thread's record).
        nodes: Only these nodes' activities (default: all). With the worker's work-item filters, this pins
            nodes to workers, e.g. a node that needs a GPU registered only on the GPU workers. A node's
            error handler (``__error_handler__{node}``) goes with the node; the graph's input node
            ``__start__`` and its default error handler go with the orchestrator.
        orchestrator: Whether this worker also drives threads (``False`` for a worker that only runs nodes).

    Results and stream chunks travel on the threads' durable streams, so the worker also hosts the stream
    entities (``worker.configure_streams`` with the default cap, unless it was called before), and the entity of
    the threads' records that the LangGraph server reads (``lg.thread``).
    """
    check_graph_name(name)
    if getattr(graph, "checkpointer", None) not in (None, False):
        raise ValueError(f"graph '{name}' has a checkpointer: compile it without one, DTS keeps the thread's state")
    chosen = list(graph.nodes) if nodes is None else list(nodes)
    unknown = sorted(set(chosen) - set(graph.nodes))
    if unknown:
        raise ValueError(f"graph '{name}' has no node named {', '.join(unknown)}; nodes: {', '.join(graph.nodes)}")
    chosen = _with_internal_nodes(graph, chosen, orchestrator)
    lg.install_id_shim()
    _host_streams(worker)
    register_records(worker)
    if orchestrator:
        worker.add_orchestrator(thread_orchestrator(graph, name, fingerprint(graph)), name=orchestrator_name(name))
    run_task = task_activity(graph)
    for node in chosen:
        worker.add_activity(run_task, name=activity_name(name, node))


def _with_internal_nodes(graph: Any, chosen: list[str], orchestrator: bool) -> list[str]:
    """``chosen`` plus the nodes LangGraph adds for them: error handlers, and with the orchestrator the input node."""
    extra = [f"__error_handler__{node}" for node in chosen]
    if orchestrator:
        extra += ["__start__", "__default_error_handler__"]
    return list(dict.fromkeys([*chosen, *(node for node in extra if node in graph.nodes)]))


def _host_streams(worker: Any) -> None:
    """Register the stream entities, so a worker that sends work-item filters also stores the threads' streams."""
    # Already registered (by the application, with its own cap, or for another graph): kept as they are.
    with contextlib.suppress(ValueError):
        worker.configure_streams(max_bytes_per_instance=DEFAULT_MAX_INSTANCE_BYTES)
