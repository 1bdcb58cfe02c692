"""The activity that runs one Pregel task: the node's code, its writers and conditional edges, on a worker.

It rebuilds the task LangGraph's loop planned (same path, same task id, checked) from the checkpoint the
orchestrator sent, runs it once, and returns its writes, its interrupts or its error. Retries are the
orchestrator's (durable): a failure that a node's ``RetryPolicy`` retries is raised, anything else is
returned as data so the run can route it as LangGraph does. A streaming run's ``custom`` and ``messages``
chunks are published to the instance's durable stream as the node emits them (``_delivery``).
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import contextvars
import dataclasses
from collections.abc import Callable
from typing import Any

from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.pregel.protocol import StreamProtocol
from langgraph.runtime import Runtime

from durabletask._errors import exception_message
from durabletask._replay.failures import qualified_name
from durabletask.extensions.langgraph import _internals as lg
from durabletask.extensions.langgraph._delivery import activity_publisher
from durabletask.extensions.langgraph._errors import StateSerializationError, node_failure
from durabletask.extensions.langgraph._events import EVENTS, INTEGRATION, NodeEvents, run_manager
from durabletask.extensions.langgraph._functional import InlineCalls
from durabletask.extensions.langgraph._saver import ReplaySaver
from durabletask.extensions.langgraph._serde import dump, load

# The configurable key under which a node finds its idempotency key.
IDEMPOTENCY_KEY = "durabletask_idempotency_key"
# The activity context of the task running in this thread (or task), for heartbeat().
_ACTIVITY: contextvars.ContextVar[Any] = contextvars.ContextVar("durabletask_langgraph_activity", default=None)


def heartbeat(details: Any = None) -> None:
    """Inside a node: say the node is alive, and stop if its run was cancelled.

    Raises ``task.ActivityCancelledError`` once the run was cancelled (``runs.cancel`` of the LangGraph server,
    which cancels the tasks of a run it ends) or the thread's execution ended; a long node calls it now and
    then (it never blocks: heartbeats are throttled and sent in the background). Outside a cancellable run it
    only checks ``details``.

    Args:
        details: JSON-serializable progress (at most 64 KiB once serialized).

    Raises:
        RuntimeError: Not called inside a node this extension runs (in its activity).
    """
    ctx = _ACTIVITY.get()
    if ctx is None:
        raise RuntimeError("heartbeat() is only available inside a node run by durabletask.extensions.langgraph")
    ctx.heartbeat(details)


def idempotency_key(config: Any = None) -> str:
    """The idempotency key of the running node's task: ``{instance_id}:{task_id}``.

    It is the same every time this task is delivered (after a worker crash, or a durable retry), and
    differs between tasks, so it can deduplicate a node's side effects (a payment, an email).
    Call it inside a node, or pass the node's ``config``.

    Args:
        config: The node's ``RunnableConfig``; the one LangGraph's context holds when ``None``.

    Raises:
        RuntimeError: Not called inside a node this extension runs.
    """
    found = (config if config is not None else get_config()).get("configurable", {}).get(IDEMPOTENCY_KEY)
    if not found:
        raise RuntimeError("idempotency_key() is only available inside a node run by durabletask.extensions.langgraph")
    return str(found)


def _task_config(
    payload: dict[str, Any], settings: dict[str, Any], collect: Callable[[Any], None], store: Any
) -> dict[str, Any]:
    modes = payload.get("stream") or ()
    runtime = Runtime(
        context=settings.get("context"),
        store=store,
        stream_writer=(lambda chunk: collect(((), "custom", chunk))) if "custom" in modes else (lambda chunk: None),
    )
    configurable = {
        **settings["configurable"],
        "thread_id": settings["thread_id"],
        "checkpoint_ns": "",
        lg.CONFIG_KEY_RUNTIME: runtime,
        IDEMPOTENCY_KEY: f"{payload['instance']}:{payload['task_id']}",
    }
    if settings.get("resume_map") is not None:
        configurable[lg.CONFIG_KEY_RESUME_MAP] = settings["resume_map"]
    if settings.get("resuming") is not None:
        configurable[lg.CONFIG_KEY_RESUMING] = settings["resuming"]
    config: dict[str, Any] = {"configurable": configurable, "metadata": dict(settings.get("metadata") or {})}
    if settings.get("recursion_limit") is not None:
        config["recursion_limit"] = settings["recursion_limit"]
    if subgraph_modes := payload.get("subgraph_modes"):
        # subgraphs run in this task: their chunks (with their namespaces) go out with the task's
        configurable[lg.CONFIG_KEY_STREAM] = StreamProtocol(collect, set(subgraph_modes))
    handlers: list[Any] = []
    if "messages" in modes:
        handlers.append(lg.StreamMessagesHandler(collect, bool(payload.get("subgraph_modes"))))
    if EVENTS in modes and payload.get("events"):
        # After the messages handler: it gives a node's messages their IDs, which LangGraph's events (sent later,
        # from its loop) then carry.
        handlers.append(NodeEvents(lambda event: collect(((), EVENTS, event))))
    if handlers:
        config["callbacks"] = handlers
        # what Pregel.stream adds to its callbacks' metadata, so the chunks' metadata is LangGraph's
        config["metadata"] = {**INTEGRATION, **config["metadata"]}
    return dict(lg.ensure_config(config))  # type: ignore[arg-type]


def prepare_task(
    graph: Any, payload: dict[str, Any], collect: Callable[[Any], None], saver: ReplaySaver | None
) -> tuple[Any, Callable[[Any, Any], str]]:
    """The executable task the orchestrator planned, rebuilt here (its id checked against the plan), and the
    function naming the ids of the functional-API calls it makes."""
    checkpoint = load(payload["checkpoint"])
    if "versions" in payload:
        checkpoint.update(load(payload["versions"]))
    if send := payload.get("send"):
        # Only this task's packet travels; it keeps its index in the pending sends (the task id depends on it).
        checkpoint["channel_values"][lg.TASKS] = [None] * send["index"] + [load(send["packet"])]
    channels, managed = lg.channels_from_checkpoint(graph.channels, checkpoint)
    config = _task_config(payload, load(payload["config"]), collect, getattr(graph, "store", None))
    manager = None
    if EVENTS in (payload.get("stream") or ()) and payload.get("events"):
        # The run's chain, as the nodes' parent: their callbacks (and so their events) descend from it.
        manager = run_manager(load(payload["events"]), config.pop("callbacks"))
    common: dict[str, Any] = {
        "checkpoint": checkpoint,
        "pending_writes": [tuple(w) for w in load(payload["pending"])],
        "processes": graph.nodes,
        "channels": channels,
        "managed": managed,
        # The worker's graph brings its own store (compile(store=...)), e.g. one backed by a database.
        "config": config,
        "step": payload["step"],
        "stop": payload["stop"],
        "retry_policy": graph.retry_policy,
        "cache_policy": graph.cache_policy,
        "checkpointer": saver,
        "store": getattr(graph, "store", None),
        "manager": manager,
    }
    ids: dict[str, Any] = {
        "checkpoint_id_bytes": binascii.unhexlify(checkpoint["id"].replace("-", "")),
        "checkpoint_null_version": lg.checkpoint_null_version(checkpoint),
        "for_execution": True,
    }
    handles = payload.get("handles")
    task: Any
    if handles is None:
        task = lg.prepare_single_task(tuple(load(payload["path"])), payload["task_id"], **common, **ids)
    else:
        # An error handler: rebuild the task that failed, then LangGraph's handler task for it.
        failed: Any = lg.prepare_single_task(tuple(load(handles["path"])), handles["task_id"], **common, **ids)
        error = node_failure(load(handles["error"]))
        task = failed and lg.prepare_node_error_handler_task(
            failed,
            handler_node_name=payload["node"],
            failed_error=error,
            **{**common, "config": failed.config},
        )
        if task is not None and task.id != payload["task_id"]:
            raise RuntimeError(f"error handler task {task.id} != {payload['task_id']}: the graph changed")
    if task is None:
        raise RuntimeError(f"task '{payload['task_id']}' of node '{payload['node']}' no longer exists in this graph")

    def call_task_id(func: Any, input: Any) -> str:
        # As LangGraph's runner schedules a call: the parent's path, its next call index, the parent's id.
        index = task.config[lg.CONF][lg.CONFIG_KEY_SCRATCHPAD].call_counter()
        call = lg.Call(func, input, retry_policy=None, cache_policy=None, callbacks=None)
        path = (lg.PUSH, task.path, index, task.id, call)
        child: Any = lg.prepare_single_task(
            path, None, **{**common, "config": task.config, **ids, "for_execution": False}
        )
        return str(child.id)

    return task, call_task_id


def execute_task(graph: Any, payload: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
    """Run one task and report its outcome (see the module docstring for what is raised).

    With ``ctx`` (the activity's context) and a streaming run, the task's chunks are published as they come.
    """
    chunks: list[Any] = []
    unsent: list[BaseException] = []
    collect = chunks.append
    if ctx is not None and payload.get("live"):
        collect = activity_publisher(ctx, payload["live"], unsent)
    # A subgraph node gets the checkpoints its subgraphs saved in earlier tasks, and returns what they saved.
    saver = ReplaySaver.restore(payload["subgraphs"]) if "subgraphs" in payload else None
    task, call_task_id = prepare_task(graph, payload, collect, saver)
    if (cached := _cached_writes(graph, task)) is not None:
        return {"writes": dump(cached, f"the cached writes of node '{task.name}'"), "cached": True}
    policies = task.retry_policy
    task = dataclasses.replace(task, retry_policy=())  # retries are durable, in the orchestrator
    saved = {task_id: value for task_id, channel, value in load(payload["pending"]) if channel == lg.RETURN}
    calls = InlineCalls(call_task_id, saved, collect, "updates" in (payload.get("stream") or ()))
    result: dict[str, Any] = {}
    token = _ACTIVITY.set(ctx)
    # With ``events``, the node streams its output as it does under ``astream_events`` (its on_chain_stream).
    streamed = EVENTS in (payload.get("stream") or ())
    try:
        if streamed or lg.is_async_only(graph.nodes.get(task.name)):  # ``async def`` nodes run on a loop of their own
            asyncio.run(lg.arun_with_retry(task, None, stream=streamed, configurable={lg.CONFIG_KEY_CALL: calls}))
        else:
            lg.run_with_retry(task, None, configurable={lg.CONFIG_KEY_CALL: calls})
    except GraphInterrupt as exc:
        result["interrupts"] = dump(list(exc.args[0]) if exc.args else [], "an interrupt's value")
    except Exception as exc:
        if policies and any(lg.should_retry_on(policy, exc) for policy in policies):
            raise
        result["error"] = _describe(exc)
    finally:
        _ACTIVITY.reset(token)
    if unsent:
        raise unsent[0]
    writes = list(task.writes)
    lg.ensure_message_ids(graph.channels, writes)
    if not result:  # finished: what a cache may hold (never an error or an interrupt)
        _cache_writes(graph, task, writes)
    result["writes"] = dump(writes if "error" not in result else [], f"the writes of node '{task.name}'")
    if saver is not None:
        result["subgraphs"] = saver.export()
    if calls.made:
        result["calls"] = dump(calls.made, f"the results of the tasks node '{task.name}' called")
    if chunks:
        result["chunks"] = dump(chunks, f"the stream chunks of node '{task.name}'")
    return result


def _cached_writes(graph: Any, task: Any) -> list[Any] | None:
    """The writes the worker graph's cache holds for this task (its node's ``CachePolicy`` key), if any."""
    cache, key = getattr(graph, "cache", None), task.cache_key
    if cache is None or key is None:
        return None
    found = cache.get([(key.ns, key.key)])
    return list(found[(key.ns, key.key)]) if (key.ns, key.key) in found else None


def _cache_writes(graph: Any, task: Any, writes: list[Any]) -> None:
    cache, key = getattr(graph, "cache", None), task.cache_key
    if cache is not None and key is not None:
        cache.set({(key.ns, key.key): (writes, key.ttl)})


def _describe(exc: Exception) -> dict[str, Any]:
    """A node's exception for the orchestrator: its type, message, and arguments when they can be serialized."""
    # exception_message: a node's error whose __str__ raises must still be reported as that node's failure.
    described: dict[str, Any] = {"type": qualified_name(type(exc)), "message": exception_message(exc)}
    with contextlib.suppress(StateSerializationError):  # without them, the stand-in is built from the message
        described["args"] = dump(list(exc.args), "the exception's arguments")
    return described


def task_activity(graph: Any) -> Callable[[Any, dict[str, Any]], dict[str, Any]]:
    """The activity function for every node of ``graph``."""

    def run_langgraph_task(ctx: Any, payload: dict[str, Any]) -> dict[str, Any]:
        return execute_task(graph, payload, ctx)

    return run_langgraph_task
