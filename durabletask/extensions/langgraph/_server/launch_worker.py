"""The worker side of a project: every graph of ``langgraph.json`` registered, factories built per task.

A compiled graph is registered with ``register_graph``. A factory is called as LangGraph's server calls it:
once when the worker starts, for the orchestrator (``threads.update``: the graph's topology, which plans each
superstep and applies writes, never runs node code), and again in every node activity with the run's config and
context (``threads.create_run``), so the node code that runs is the one the factory builds for that run. The
factory must give the same topology each time, as LangGraph's server requires.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from durabletask.extensions.langgraph import activity_name, register_graph
from durabletask.extensions.langgraph._activity import execute_task
from durabletask.extensions.langgraph._serde import load
from durabletask.extensions.langgraph._server.app import register_worker_parts
from durabletask.extensions.langgraph._server.config import GraphSpec, ProjectConfig
from durabletask.extensions.langgraph._server.config_graphs import GraphSpecError, prepare_graph

# Nodes whose activity register_graph adds beside the orchestrator: LangGraph's own, with no user code.
_ORCHESTRATOR_NODES = ("__start__", "__default_error_handler__")


def register_project(
    worker: Any, project: ProjectConfig, *, store: Any = None, connect: Callable[[], Any] | None = None
) -> contextlib.ExitStack:
    """Register every graph of ``project`` on ``worker`` (before ``worker.start()``), and what the route modules
    keep on workers (their entities and orchestrators).

    Args:
        worker: A ``TaskHubGrpcWorker``.
        project: The loaded ``langgraph.json``.
        store: The store the graphs' nodes get (``runtime.store``) when a graph brings none.
        connect: Makes an asyncio client of the worker's hub, for the route modules' activities that need one
            (a cron's firing); without it they are not registered.

    Returns:
        What closes the factories' context managers held for the orchestrators (close it after the worker stops).
    """
    held = contextlib.ExitStack()
    try:
        for graph_id, spec in project.graphs.items():
            if spec.is_factory:
                register_factory(worker, graph_id, spec, held, store=store)
            else:
                register_graph(worker, graph_id, prepare_graph(graph_id, spec.load(), store))
        register_worker_parts(worker, project, connect)
    except BaseException:
        held.close()
        raise
    return held


def register_factory(
    worker: Any, graph_id: str, spec: GraphSpec, held: contextlib.ExitStack, *, store: Any = None
) -> None:
    """A factory's graph: the orchestrator on a build for ``threads.update``, each node built per task."""
    try:
        topology = _enter(spec, "threads.update", {"configurable": {}}, None, store, held)
    except GraphSpecError:
        raise
    except Exception as error:
        raise GraphSpecError(
            f"graphs.{graph_id}: the factory failed when the worker built the graph's topology "
            f"(access_context 'threads.update'): {type(error).__name__}: {error}"
        ) from error
    register_graph(worker, graph_id, topology, nodes=[])
    run_task = factory_activity(spec, store)
    for node in topology.nodes:
        if node not in _ORCHESTRATOR_NODES:
            worker.add_activity(run_task, name=activity_name(graph_id, node))


def _enter(
    spec: GraphSpec, access: str, config: dict[str, Any], context: Any, store: Any, stack: contextlib.ExitStack
) -> Any:
    """The graph ``spec.open`` gives, built on an event loop of its own, left open until ``stack`` closes."""
    loop = asyncio.new_event_loop()
    manager = spec.open(access, config=config, context=context, store=store)
    try:
        graph = loop.run_until_complete(manager.__aenter__())
    except BaseException:
        loop.close()
        raise

    def leave(*exc: Any) -> bool:
        try:
            loop.run_until_complete(manager.__aexit__(*exc))
        finally:
            loop.close()
        return False  # the exception, if any, goes on

    stack.push(leave)
    return graph


def run_config(settings: dict[str, Any]) -> dict[str, Any]:
    """The ``RunnableConfig`` a factory gets in a node activity: the run's configurable and its thread."""
    config: dict[str, Any] = {
        "configurable": {**(settings.get("configurable") or {}), "thread_id": settings.get("thread_id")}
    }
    if settings.get("recursion_limit") is not None:
        config["recursion_limit"] = settings["recursion_limit"]
    return config


def factory_activity(spec: GraphSpec, store: Any = None) -> Callable[[Any, dict[str, Any]], dict[str, Any]]:
    """The activity of a factory graph's nodes: the factory is called for the run, then the task runs on its graph."""

    def run_langgraph_task(ctx: Any, payload: dict[str, Any]) -> dict[str, Any]:
        settings = load(payload["config"])
        # A context manager the factory returned sees the task's exception, as an ``async with`` body's would.
        with contextlib.ExitStack() as stack:
            graph = _enter(spec, "threads.create_run", run_config(settings), settings.get("context"), store, stack)
            return execute_task(graph, payload, ctx)

    return run_langgraph_task
