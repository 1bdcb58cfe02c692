"""One LangGraph run driven step by step: LangGraph's own loop plans and commits, the caller executes tasks.

``drive_run`` is a generator with no I/O: it yields each superstep's tasks as :class:`TaskCall` s and is sent
back one :class:`TaskOutcome` per call, in the same order. The orchestrator turns the calls into activities;
tests can run them in-process. Everything here runs in the orchestrator, so it must be deterministic: it is,
as long as the graph's reducers are (node and edge code runs in the activities).
"""

from __future__ import annotations

import weakref
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from langgraph.channels.delta import DeltaChannel
from langgraph.errors import ErrorCode, GraphInterrupt, GraphRecursionError, create_error_message
from langgraph.pregel.protocol import StreamProtocol
from langgraph.types import RetryPolicy

from durabletask import task as dt
from durabletask.extensions.langgraph import _internals as lg
from durabletask.extensions.langgraph._errors import node_failure
from durabletask.extensions.langgraph._events import EVENTS, chain_event, root_context
from durabletask.extensions.langgraph._serde import dump, load

Chunk = tuple[tuple[str, ...], str, Any]
# The modes LangGraph's loop emits by itself; "custom", "messages" and the nodes' "events" come from the activities.
LOOP_MODES = frozenset({"values", "updates", "checkpoints", "tasks", "debug"})
ACTIVITY_MODES = frozenset({"custom", "messages", EVENTS})


@dataclass
class RunSpec:
    """What a client asked one run to do (decoded from its request)."""

    input: Any
    configurable: dict[str, Any] = field(default_factory=dict)
    checkpoint_id: str | None = None
    stream_modes: tuple[str, ...] = ("updates", "values")
    interrupt_before: Any = None
    interrupt_after: Any = None
    recursion_limit: int | None = None
    context: Any = None
    subgraphs: bool = False  # stream the chunks of subgraphs too (with their namespaces)
    metadata: dict[str, Any] = field(default_factory=dict)  # the config's metadata: the run's chain and nodes get it


@dataclass
class TaskCall:
    """One Pregel task to execute: the node, the activity input, and the node's LangGraph retry policies."""

    node: str
    task_id: str
    payload: dict[str, Any]
    retry_policy: Sequence[RetryPolicy] | None


@dataclass
class TaskOutcome:
    """What executing a task produced: its writes, and interrupts or an error; stream chunks it emitted."""

    writes: list[tuple[str, Any]]
    interrupts: list[Any] | None = None
    error: dict[str, Any] | None = None  # type (qualified name), message, args (when they could be serialized)
    chunks: list[Chunk] = field(default_factory=list)
    subgraph_checkpoints: dict[str, str] | None = None  # what the task's subgraphs saved (a saver export)
    cached: bool = False  # the writes came from the worker graph's cache; the node did not run
    calls: list[tuple[str, Any]] = field(default_factory=list)  # functional-API calls run: (call task id, result)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> TaskOutcome:
        error = payload.get("error")
        return cls(
            writes=[tuple(w) for w in load(payload["writes"])],
            interrupts=load(payload["interrupts"]) if payload.get("interrupts") else None,
            error={**error, "args": load(error["args"]) if error.get("args") else None} if error else None,
            chunks=[(tuple(ns), str(mode), value) for ns, mode, value in load(payload["chunks"])]
            if payload.get("chunks")
            else [],
            subgraph_checkpoints=payload.get("subgraphs"),
            cached=bool(payload.get("cached")),
            calls=[(str(c[0]), c[1]) for c in load(payload["calls"])] if payload.get("calls") else [],
        )


@dataclass
class RunResult:
    """The chunks a run emitted, in order, and the error that ended it (``None`` at END or an interrupt)."""

    chunks: list[Chunk]
    error: BaseException | None = None


def run_config(graph: Any, thread_id: str, spec: RunSpec) -> dict[str, Any]:
    configurable: dict[str, Any] = {**spec.configurable, "thread_id": thread_id, "checkpoint_ns": ""}
    if spec.checkpoint_id:
        configurable["checkpoint_id"] = spec.checkpoint_id
    config: dict[str, Any] = {"configurable": configurable}
    if spec.metadata:
        config["metadata"] = dict(spec.metadata)
    if spec.recursion_limit is not None:
        config["recursion_limit"] = spec.recursion_limit
    return dict(lg.ensure_config(graph.config, config))  # type: ignore[arg-type]


def drive_run(
    graph: Any,
    saver: Any,
    thread_id: str,
    spec: RunSpec,
    *,
    graph_name: str,
    instance_id: str,
    chunks: list[Chunk] | None = None,
    run_id: str | None = None,
) -> Generator[list[TaskCall], list[TaskOutcome], RunResult]:
    """Run ``spec`` on ``graph`` with ``saver`` as its checkpointer, yielding the tasks of each superstep.

    The chunks the run emits are appended to ``chunks`` as they come (a new list if not given). ``run_id`` is the
    run's ID in its ``events`` (the run's chain); the instance ID stands in when it is not given.
    """
    config = run_config(graph, thread_id, spec)
    modes = set(spec.stream_modes) | {"values", "updates"}
    stream_modes, output_keys, before, after, *_ = graph._defaults(
        config,
        stream_mode=sorted(modes & LOOP_MODES),
        print_mode=(),
        output_keys=None,
        interrupt_before=spec.interrupt_before,
        interrupt_after=spec.interrupt_after,
        durability="sync",
    )
    chunks = [] if chunks is None else chunks
    root = root_context(graph, config, run_id or instance_id) if EVENTS in spec.stream_modes else None
    if root is not None:  # the run's chain starts before the loop emits anything
        chunks.append(((), EVENTS, chain_event(root, "start", spec.input)))
    stream = StreamProtocol(chunks.append, set(stream_modes))
    # "updates" too: functional-API @task calls run inside their entrypoint's task and report their own
    wanted_from_tasks = sorted(set(spec.stream_modes) & (ACTIVITY_MODES | {"updates"}))
    try:
        with _open_loop(graph, saver, spec.input, config, stream, output_keys, before, after) as loop:
            runner = lg.PregelRunner(
                submit=weakref.WeakMethod(loop.submit),
                put_writes=weakref.WeakMethod(loop.put_writes),
                node_error_handler_map=graph.node_error_handler_map,
                schedule_error_handler=loop.schedule_error_handler,
            )
            while loop.tick():
                pending = [t for t in loop.tasks.values() if not t.writes]
                step = Superstep()
                while pending:
                    calls = describe_tasks(
                        loop, pending, spec, graph_name, instance_id, wanted_from_tasks, step.handles, root
                    )
                    outcomes = yield calls
                    pending = settle(loop, runner, pending, outcomes, chunks, step)
                step.finish()
                loop.after_tick()
                if (put := getattr(loop, "_put_checkpoint_fut", None)) is not None:
                    put.result()
        if loop.status == "out_of_steps":
            raise GraphRecursionError(recursion_message(config["recursion_limit"]))
        if root is not None:  # a run that failed ends without its chain's end, as with version v2 in-process
            chunks.append(((), EVENTS, chain_event(root, "end", loop.output)))
    except Exception as exc:  # a failed run: the orchestrator fails its execution with this error
        return RunResult(chunks, exc)
    return RunResult(chunks)


def _open_loop(
    graph: Any, saver: Any, input: Any, config: Any, stream: Any, output_keys: Any, before: Any, after: Any
) -> Any:
    """LangGraph's loop for one run, as ``Pregel.stream`` makes it (no store or cache: those are the workers')."""
    return lg.SyncPregelLoop(
        input,
        stream=stream,
        config=config,
        store=None,
        cache=None,
        checkpointer=saver,
        nodes=graph.nodes,
        specs=graph.channels,
        output_keys=output_keys,
        input_keys=graph.input_channels,
        stream_keys=graph.stream_channels_asis,
        interrupt_before=before,
        interrupt_after=after,
        manager=None,
        durability="sync",
        trigger_to_nodes=graph.trigger_to_nodes,
        migrate_checkpoint=graph._migrate_checkpoint,
        retry_policy=graph.retry_policy,
        cache_policy=graph.cache_policy,
    )


def recursion_message(limit: int) -> str:
    return create_error_message(
        message=(
            f"Recursion limit of {limit} reached without hitting a stop condition. "
            "You can increase the limit by setting the `recursion_limit` config key."
        ),
        error_code=ErrorCode.GRAPH_RECURSION_LIMIT,
    )


def describe_tasks(
    loop: Any,
    tasks: list[Any],
    spec: RunSpec,
    graph_name: str,
    instance_id: str,
    stream_modes: list[str],
    handles: dict[str, Any],
    root: dict[str, Any] | None = None,
) -> list[TaskCall]:
    """The activity inputs for ``tasks``: each carries the superstep's checkpoint and its own pending writes.

    The checkpoint's channel values are serialized once for all of them. What grows with the graph or the
    fan-out goes per task, and only the task's part: the versions of its node's triggers and what its node has
    seen (LangGraph's trigger check), and its own ``Send`` packet.
    """
    # The channels can be ahead of the saved checkpoint (a Command's update, resumed writes are applied
    # without a new one), so the tasks get the live values under the checkpoint's id and time.
    # DeltaChannels go as snapshots of their values: the activity has no saver to replay their history from.
    deltas = {name for name, channel in loop.channels.items() if isinstance(channel, DeltaChannel)}
    live = lg.create_checkpoint(
        loop.checkpoint, loop.channels, loop.step, id=loop.checkpoint["id"], channels_to_snapshot=deltas
    )
    live["ts"] = loop.checkpoint["ts"]
    packets = live["channel_values"].pop(lg.TASKS, None) or []
    versions = {"channel_versions": live["channel_versions"], "versions_seen": live["versions_seen"]}
    live["channel_versions"], live["versions_seen"] = {}, {}
    configurable = {k: v for k, v in loop.config["configurable"].items() if k in spec.configurable}
    shared = {
        "graph": graph_name,
        "instance": instance_id,
        "step": loop.step,
        "stop": loop.stop,
        "config": dump(
            {
                "configurable": configurable,
                "thread_id": loop.config["configurable"]["thread_id"],
                "resume_map": loop.config["configurable"].get(lg.CONFIG_KEY_RESUME_MAP),
                "resuming": loop.config["configurable"].get(lg.CONFIG_KEY_RESUMING),
                "recursion_limit": loop.config.get("recursion_limit"),
                "context": spec.context,
                "metadata": spec.metadata,
            },
            "the run's config",
        ),
        "stream": stream_modes,
        "subgraph_modes": sorted(set(spec.stream_modes) & LOOP_MODES) if spec.subgraphs else [],
    }
    if root is not None and EVENTS in stream_modes:
        shared["events"] = dump(root, "the run's metadata")  # the nodes' parent chain, for their events
    states = _States(live)
    return [
        _describe_task(
            loop,
            task,
            {**shared, "checkpoint": states.of(loop, task, task.id in handles)},
            packets,
            versions,
            handles.get(task.id),
        )
        for task in tasks
    ]


class _States:
    """The superstep's checkpoint serialized per set of channels read, each set once."""

    def __init__(self, live: Any) -> None:
        self.live = live
        self.dumped: dict[frozenset[str] | None, dict[str, str]] = {}

    def of(self, loop: Any, task: Any, handles_error: bool) -> dict[str, str]:
        read = None if handles_error else _channels_read(loop.nodes.get(task.name))
        if read not in self.dumped:
            values = self.live["channel_values"]
            part = values if read is None else {k: v for k, v in values.items() if k in read}
            self.dumped[read] = dump({**self.live, "channel_values": part}, "the thread's state")
        return self.dumped[read]


def _channels_read(node: Any) -> frozenset[str] | None:
    """The channels a node's task reads, or ``None`` when it may read any of them.

    A node reads its input channels (and its triggers, to check them). Its conditional edges run in its task
    and read the state themselves, so a node with any writer besides plain channel writes gets everything.
    """
    if node is None or any(not isinstance(writer, lg.ChannelWrite) for writer in node.writers):
        return None
    channels = node.channels
    names = (
        [channels] if isinstance(channels, str) else list(channels.values() if isinstance(channels, dict) else channels)
    )
    return frozenset([*names, *node.triggers, lg.PREVIOUS])


def _send_index(path: Any) -> int | None:
    """The index of the ``Send`` packet a task path names (``(PUSH, idx, ...)``), else ``None``."""
    if len(path) >= 2 and path[0] == lg.PUSH and isinstance(path[1], int):
        return int(path[1])
    return None


def _task_versions(loop: Any, names: list[str], versions: dict[str, Any]) -> dict[str, Any]:
    """The channel versions the trigger check of ``names`` compares (never empty: their type is the null version)."""
    triggers = {channel for name in names if name in loop.nodes for channel in loop.nodes[name].triggers}
    channel_versions = versions["channel_versions"]
    kept = {c: v for c, v in channel_versions.items() if c in triggers} or dict(list(channel_versions.items())[:1])
    seen = {name: versions["versions_seen"][name] for name in names if name in versions["versions_seen"]}
    return {"channel_versions": kept, "versions_seen": seen}


def _describe_task(
    loop: Any, task: Any, shared: dict[str, Any], packets: list[Any], versions: dict[str, Any], failed: Any
) -> TaskCall:
    # its own writes, the run's (NULL_TASK_ID), and the results of functional-API calls made before a resume
    pending = [w for w in loop.checkpoint_pending_writes if w[0] in (task.id, lg.NULL_TASK_ID) or w[1] == lg.RETURN]
    payload = {
        **shared,
        "node": task.name,
        "task_id": task.id,
        "path": dump(task.path[:2], "a task path"),
        "pending": dump(pending, f"the pending writes of node '{task.name}'"),
    }
    if task.subgraphs:
        # The task's subgraphs keep their checkpoints under its namespace; they travel with the task.
        payload["subgraphs"] = loop.checkpointer.export(task.config["configurable"][lg.CONFIG_KEY_CHECKPOINT_NS])
    sent_by = task.path
    names = [task.name]
    if failed is not None:  # an error handler: it rebuilds the task that failed
        path, failed_id, error = failed
        payload["handles"] = {
            "path": dump(path, "a task path"),
            "task_id": failed_id,
            "error": dump(error, "the failed task's error"),
        }
        sent_by = path
        names.append(path[1] if path[0] == lg.PULL else task.name)
    payload["versions"] = dump(_task_versions(loop, names, versions), "channel versions")
    if (index := _send_index(sent_by)) is not None and index < len(packets):
        payload["send"] = {"index": index, "packet": dump(packets[index], f"the Send to node '{task.name}'")}
    return TaskCall(task.name, task.id, payload, task.retry_policy)


@dataclass
class Superstep:
    """What the tasks of one superstep ended with, gathered across its error handlers."""

    interrupts: list[Any] = field(default_factory=list)
    failure: BaseException | None = None
    # error-handler task id -> (failed task's path, its id, (error type, message))
    handles: dict[str, tuple[Any, str, dict[str, Any]]] = field(default_factory=dict)

    def finish(self) -> None:
        """Raise as LangGraph's runner does at the end of a superstep: the first failure, else the interrupts."""
        if self.failure is not None:
            raise self.failure
        if self.interrupts:
            raise GraphInterrupt(tuple(self.interrupts))


def settle(
    loop: Any, runner: Any, tasks: list[Any], outcomes: list[TaskOutcome], chunks: list[Chunk], step: Superstep
) -> list[Any]:
    """Commit each task's outcome as ``PregelRunner`` does; return the error-handler tasks to run next."""
    handlers = []
    for task, outcome in zip(tasks, outcomes, strict=True):
        chunks.extend(outcome.chunks)
        if outcome.subgraph_checkpoints is not None:
            loop.checkpointer.merge(outcome.subgraph_checkpoints)
        for call_id, value in outcome.calls:  # saved as LangGraph saves a call task's result
            loop.put_writes(call_id, [(lg.RETURN, value)])
        task.writes.clear()
        task.writes.extend(outcome.writes)
        if outcome.cached:  # as LangGraph's loop applies a cache hit
            loop.put_writes(task.id, task.writes, cached=True)
        elif outcome.interrupts is not None:
            runner.commit(task, GraphInterrupt(tuple(outcome.interrupts)))
            step.interrupts.extend(outcome.interrupts)
        elif outcome.error is not None:
            exc = node_failure(outcome.error)
            runner.commit(task, exc)
            if runner._should_route_to_error_handler(task) and (handler := loop.schedule_error_handler(task, exc)):
                step.handles[handler.id] = (task.path[:2], task.id, outcome.error)
                handlers.append(handler)
            else:
                step.failure = step.failure or exc
        else:
            runner.commit(task, None)
    return handlers


def invoke_output(chunks: list[Chunk]) -> Any:
    """What ``Pregel.invoke`` returns for a run that emitted ``chunks`` (the last values, plus interrupts)."""
    latest: Any = None
    interrupts: list[Any] = []
    for _, mode, payload in chunks:
        if mode == "updates" and isinstance(payload, dict) and (found := payload.get(lg.INTERRUPT)) is not None:
            interrupts.extend(found)
        elif mode == "values":
            latest = payload
    if interrupts:
        return {**latest, lg.INTERRUPT: interrupts} if isinstance(latest, dict) else {lg.INTERRUPT: interrupts}
    return latest


def dts_retry(policies: Sequence[RetryPolicy] | None) -> dt.RetryPolicy | None:
    """The DTS retry policy for a node's LangGraph policies (the first one's timing; no jitter).

    Which exceptions are retried is decided in the activity by each policy's ``retry_on``.
    """
    if not policies:
        return None
    first = policies[0]
    return dt.RetryPolicy(
        first_retry_interval=timedelta(seconds=first.initial_interval),
        max_number_of_attempts=max(1, first.max_attempts),
        backoff_coefficient=max(1.0, first.backoff_factor),
        max_retry_interval=timedelta(seconds=first.max_interval),
    )
