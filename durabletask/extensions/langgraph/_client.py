"""``DurableGraph``: a compiled graph's run and state methods, served by the thread's orchestration.

The sync methods need a ``TaskHubGrpcClient``, the ``a``-prefixed ones an ``AsyncTaskHubGrpcClient``; both
carry out the same plans from ``_requests``.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from typing import Any

from durabletask.client import AlreadyExistsError, OrchestrationStatus
from durabletask.extensions.langgraph import _internals as lg
from durabletask.extensions.langgraph import _requests as rq
from durabletask.extensions.langgraph._copy import copy_carry
from durabletask.extensions.langgraph._delivery import TOPIC
from durabletask.extensions.langgraph._naming import check_graph_name, shape, shape_fingerprint, thread_id_of
from durabletask.extensions.langgraph._orchestrator import thread_orchestrator
from durabletask.extensions.langgraph._saver import ReplaySaver
from durabletask.extensions.langgraph._serde import load
from durabletask.streams import StreamNotFoundError, StreamTimeoutError

Plan = Generator[rq.Op, Any, Any]
# What ends a wait for the next item: the subscription's window passed, or the instance is gone (purged).
_STOPS = (StreamTimeoutError, StreamNotFoundError)


def _format(chunks: list[Any], stream_mode: str | Sequence[str], subgraphs: bool) -> list[Any]:
    """Chunks ``(namespace, mode, payload)`` as ``Pregel.stream`` yields them for these arguments."""
    single = isinstance(stream_mode, str)
    out = []
    for ns, mode, payload in chunks:
        if (mode != stream_mode if single else mode not in stream_mode) or (ns and not subgraphs):
            continue
        if subgraphs:
            out.append((tuple(ns), payload) if single else (tuple(ns), mode, payload))
        else:
            out.append(payload if single else (mode, payload))
    return out


def _reuse(op: rq.Op) -> list[OrchestrationStatus] | None:
    # Only a failed thread's instance is replaced, and only by a run that carries its checkpoints on.
    return [OrchestrationStatus.FAILED] if op.kind == "restart" else None


class DurableGraph:
    """A LangGraph graph whose runs execute durably on DTS, one orchestration per thread.

    Args:
        client: A ``TaskHubGrpcClient`` (for the sync methods) or ``AsyncTaskHubGrpcClient`` (for the
            ``a``-prefixed ones).
        name: The name the workers registered the graph under with :func:`register_graph`.
        graph: The same compiled graph (or an identical build); it must match the workers' graph.
        start_timeout: Seconds a new thread may wait for a worker before :class:`GraphNotRegisteredError`.
        poll_interval: Seconds between reads of the status of a thread whose workers answer in its custom status
            (workers from before durable streams), and between restarts of a thread a worker without the graph
            failed. Other requests wait on the instance's durable stream.
    """

    def __init__(
        self, client: Any, name: str, graph: Any, *, start_timeout: float = 30.0, poll_interval: float = 0.05
    ) -> None:
        check_graph_name(name)
        lg.install_id_shim()
        self.client = client
        self.name = name
        self.graph = graph
        self.shape = shape(graph)
        self.fingerprint = shape_fingerprint(self.shape)
        # Threads start with the graph's orchestrator itself, so they record its code hash (see code_identity).
        self._orchestrator = thread_orchestrator(graph, name, self.fingerprint)
        self._waiting = rq.Waiting(start_timeout, poll_interval)

    # ------------------------------------------------------------------------------------ plans

    def _instance(self, config: Any) -> Generator[rq.Op, Any, tuple[str, str]]:
        thread = thread_id_of(config)
        return thread, (yield from rq.resolve_instance(self.name, thread))

    def _run_plan(
        self, input: Any, config: Any, stream_modes: list[str], invoke: bool, timeout: float | None, **options: Any
    ) -> Plan:
        """Send a run; an invoke returns its output, a stream emits its chunks as they come."""
        thread, instance = yield from self._instance(config)
        body = rq.run_body(input, config, stream_modes=stream_modes, invoke=invoke, **options)
        req = rq.request("run", self.shape, thread, body)
        checkpoint_id = ((config or {}).get("configurable") or {}).get("checkpoint_id")

        def precheck(status: dict[str, Any] | None) -> None:
            rq.check_resume_locally(input, checkpoint_id, status, thread)

        result = yield from rq.send_and_wait(instance, self.name, req, self._waiting, precheck, timeout)
        return load(result["output"]) if invoke else None

    def _saver_plan(self, config: Any, history: bool) -> Plan:
        """The thread's checkpoints, in a local saver: all of them, or what ``get_state`` of ``config`` reads."""
        thread, instance = yield from self._instance(config)
        state = yield from rq.read_state(instance)
        if state is None:
            return ReplaySaver()
        if (failed := (yield from rq.failed_carry(instance, state))) is not None:
            return ReplaySaver.restore(failed["saver"])
        checkpoint_id = ((config or {}).get("configurable") or {}).get("checkpoint_id")
        req = rq.request("state", self.shape, thread, {"history": history, "checkpoint_id": checkpoint_id})
        result = yield from rq.send_and_wait(instance, self.name, req, self._waiting)
        return ReplaySaver.restore(result["saver"])

    def _update_plan(
        self, config: Any, values: Any, as_node: str | None, task_id: str | None, supersteps: Any = None
    ) -> Plan:
        thread, instance = yield from self._instance(config)
        body = {
            "values": values,
            "as_node": as_node,
            "task_id": task_id,
            "configurable": rq.user_configurable(config),
            "checkpoint_id": ((config or {}).get("configurable") or {}).get("checkpoint_id"),
        }
        if supersteps is not None:
            body["supersteps"] = [[(u.values, u.as_node, u.task_id) for u in step] for step in supersteps]
        req = rq.request("update", self.shape, thread, body)
        result = yield from rq.send_and_wait(instance, self.name, req, self._waiting)
        return load(result["config"])

    def _submit_plan(self, kind: str, body: dict[str, Any], config: Any, request_id: str | None) -> Plan:
        thread, instance = yield from self._instance(config)
        req = rq.request(kind, self.shape, thread, body)
        if request_id is not None:
            req["id"] = request_id
        yield from rq.deliver(instance, self.name, req, None, self._waiting.cursors)
        return req["id"]

    def _copy_plan(self, source: Any, target: Any) -> Plan:
        thread, _ = yield from self._instance(source)
        saver = yield from self._saver_plan(source, True)
        copy, instance = yield from self._instance(target)
        carry = copy_carry(saver, thread, copy, {"fp": self.fingerprint, "shape": self.shape})
        if not (yield rq.Op("start", instance, {"v": 2, "carry": carry})):
            raise ValueError(f"thread {copy!r} already exists: a thread is copied to a new thread ID")
        return None

    def _prune_plan(self, config: Any) -> Plan:
        thread, instance = yield from self._instance(config)
        if (yield from rq.read_state(instance)) is None:
            return None  # no checkpoints: nothing to prune
        req = rq.request("prune", self.shape, thread, {})
        yield from rq.send_and_wait(instance, self.name, req, self._waiting)
        return None

    def _local(self, saver: ReplaySaver) -> Any:
        return self.graph.copy(update={"checkpointer": saver})

    # ------------------------------------------------------------------------------ carrying out

    def _do(self, op: rq.Op) -> Any:
        if op.kind == "get":
            return self.client.get_orchestration_state(op.instance_id)
        if op.kind in ("start", "restart"):
            try:
                self.client.schedule_new_orchestration(
                    self._orchestrator, input=op.data, instance_id=op.instance_id, reuse_id_policy=_reuse(op)
                )
            except AlreadyExistsError:
                return False
            return True
        if op.kind == "raise_event":
            return self.client.raise_orchestration_event(op.instance_id, rq.RUN_EVENT, data=op.data)
        time.sleep(op.data)
        return None

    async def _ado(self, op: rq.Op) -> Any:
        if op.kind == "get":
            return await self.client.get_orchestration_state(op.instance_id)
        if op.kind in ("start", "restart"):
            try:
                await self.client.schedule_new_orchestration(
                    self._orchestrator, input=op.data, instance_id=op.instance_id, reuse_id_policy=_reuse(op)
                )
            except AlreadyExistsError:
                return False
            return True
        if op.kind == "raise_event":
            return await self.client.raise_orchestration_event(op.instance_id, rq.RUN_EVENT, data=op.data)
        await asyncio.sleep(op.data)
        return None

    def _iterate(self, plan: Plan) -> Generator[Any, None, Any]:
        """Carry out ``plan`` with the sync client, yielding what it emits; returns its result."""
        if inspect.iscoroutinefunction(self.client.get_orchestration_state):
            raise TypeError("this DurableGraph has an async client: use ainvoke, astream, aget_state, ...")
        sent: Any = None
        items: Any = None  # the plan's subscription
        try:
            while True:
                try:
                    op = plan.send(sent)
                except StopIteration as stop:
                    return stop.value
                sent = None
                if op.kind == "emit":
                    yield from op.data
                elif op.kind == "subscribe":
                    if items is not None:
                        items.close()
                    items = self.client.subscribe(op.instance_id, topics=[TOPIC], **op.data)
                elif op.kind == "next":
                    try:
                        sent = next(items, None)
                    except _STOPS:
                        sent = None
                else:
                    sent = self._do(op)
        finally:
            if items is not None:
                items.close()

    def _sync(self, plan: Plan) -> Any:
        steps = self._iterate(plan)
        while True:
            try:
                next(steps)
            except StopIteration as stop:
                return stop.value

    async def _aiterate(self, plan: Plan) -> AsyncIterator[Any]:
        """Carry out ``plan`` with the async client, yielding what it emits."""
        if not inspect.iscoroutinefunction(self.client.get_orchestration_state):
            raise TypeError("this DurableGraph has a sync client: use invoke, stream, get_state, ...")
        sent: Any = None
        items: Any = None  # the plan's subscription
        try:
            while True:
                try:
                    op = plan.send(sent)
                except StopIteration:
                    return
                sent = None
                if op.kind == "emit":
                    for item in op.data:
                        yield item
                elif op.kind == "subscribe":
                    if items is not None:
                        await items.aclose()
                    items = self.client.subscribe(op.instance_id, topics=[TOPIC], **op.data)
                elif op.kind == "next":
                    try:
                        sent = await anext(items, None)
                    except _STOPS:
                        sent = None
                else:
                    sent = await self._ado(op)
        finally:
            if items is not None:
                await items.aclose()

    async def _async(self, plan: Plan) -> Any:
        result: list[Any] = []

        def keep(value: Any) -> Generator[rq.Op, Any, None]:
            result.append((yield from value))

        async for _ in self._aiterate(keep(plan)):
            pass
        return result[0]

    def _modes(self, stream_mode: str | Sequence[str] | None) -> tuple[Any, list[str]]:
        """The stream mode as asked (the graph's own when none is), and the list of modes it names."""
        mode = stream_mode if stream_mode is not None else self.graph.stream_mode
        return mode, [mode] if isinstance(mode, str) else list(mode)

    # ----------------------------------------------------------------------------- public: sync

    def invoke(
        self,
        input: Any,
        config: Any = None,
        *,
        context: Any = None,
        stream_mode: str = "values",
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """Run the graph on the config's thread and return what ``graph.invoke`` returns.

        Returns at END or at an interrupt (with ``"__interrupt__"``), as LangGraph does. Raises
        :class:`GraphRunError` when the run fails, :class:`ResumeRejectedError` for a resume nothing waits for,
        :class:`GraphTimeoutError` (a ``TimeoutError``) when ``timeout`` seconds pass without the result.

        Args:
            input: The graph's input, or a ``Command`` (e.g. ``Command(resume=...)`` to answer an interrupt);
                ``None`` continues from the thread's latest checkpoint.
            config: A LangGraph config naming the thread: ``{"configurable": {"thread_id": ...}}``, optionally
                with a ``checkpoint_id`` to run from (time travel).
            context: The run's context object (LangGraph's ``context=``).
            stream_mode: ``"values"`` returns the final state; any other mode returns the list of chunks
                :meth:`stream` yields.
            interrupt_before: Nodes to interrupt before, for this run.
            interrupt_after: Nodes to interrupt after, for this run.
            timeout: Seconds to wait for the result; no limit when ``None``.

        Raises:
            GraphRunError: The run failed.
            ResumeRejectedError: ``input`` resumes an interrupt that nothing waits for.
            GraphTimeoutError: ``timeout`` passed first.
            MissingThreadIdError: ``config`` names no ``thread_id``.
            TypeError: The graph was built with an asyncio client (use :meth:`ainvoke`).
        """
        options = {"context": context, "interrupt_before": interrupt_before, "interrupt_after": interrupt_after}
        if stream_mode != "values":
            return list(self.stream(input, config, stream_mode=stream_mode, timeout=timeout, **options))
        return self._sync(self._run_plan(input, config, ["values", "updates"], True, timeout, **options))

    def stream(
        self,
        input: Any,
        config: Any = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] | None = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        subgraphs: bool = False,
        timeout: float | None = None,
    ) -> Iterator[Any]:
        """The run's chunks, as ``graph.stream`` yields them, each superstep's as soon as it has finished.

        With ``subgraphs=True``, the chunks of subgraphs too, each with its namespace, as in LangGraph.
        ``timeout`` bounds the whole run in seconds (:class:`GraphTimeoutError`).

        Args:
            input: The graph's input, or a ``Command``; ``None`` continues from the latest checkpoint.
            config: A LangGraph config naming the thread (``configurable.thread_id``).
            context: The run's context object.
            stream_mode: A LangGraph stream mode or a list of them; the graph's own when ``None``.
            interrupt_before: Nodes to interrupt before, for this run.
            interrupt_after: Nodes to interrupt after, for this run.
            subgraphs: Also yield the chunks of subgraphs, as ``(namespace, chunk)``.
            timeout: Seconds the whole run may take; no limit when ``None``.

        Raises:
            GraphRunError: The run failed.
            GraphTimeoutError: ``timeout`` passed first.
            MissingThreadIdError: ``config`` names no ``thread_id``.
        """
        mode, modes = self._modes(stream_mode)
        options = {"context": context, "interrupt_before": interrupt_before, "interrupt_after": interrupt_after}
        plan = self._run_plan(input, config, modes, False, timeout, subgraphs=subgraphs, **options)
        for chunk in self._iterate(plan):
            yield from _format([chunk], mode, subgraphs)

    def get_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """LangGraph's ``StateSnapshot`` of the thread (at ``checkpoint_id`` if the config names one).

        With ``subgraphs=True``, the tasks of an interrupted subgraph node carry the subgraph's own snapshot.

        Args:
            config: A LangGraph config naming the thread, and optionally a ``checkpoint_id``.
            subgraphs: Include the snapshots of interrupted subgraphs.
        """
        return self._local(self._sync(self._saver_plan(config, False))).get_state(config, subgraphs=subgraphs)

    def get_state_history(
        self, config: Any, *, filter: dict[str, Any] | None = None, before: Any = None, limit: int | None = None
    ) -> Iterator[Any]:
        """The thread's ``StateSnapshot`` s, newest first, as ``graph.get_state_history`` lists them.

        Args:
            config: A LangGraph config naming the thread.
            filter: Only checkpoints whose metadata has these key/value pairs.
            before: Only checkpoints before this config's checkpoint.
            limit: At most this many snapshots.
        """
        local = self._local(self._sync(self._saver_plan(config, True)))
        yield from local.get_state_history(config, filter=filter, before=before, limit=limit)

    def update_state(self, config: Any, values: Any, as_node: str | None = None, task_id: str | None = None) -> Any:
        """Apply ``values`` as if ``as_node`` wrote them (in the thread's orchestration); returns the new config.

        Args:
            config: A LangGraph config naming the thread (and optionally the checkpoint to fork from).
            values: The state update, as the node would return it.
            as_node: The node the update counts as coming from; LangGraph's choice when ``None``.
            task_id: The pending task the update answers, when it is for one.

        Raises:
            MissingThreadIdError: ``config`` names no ``thread_id``.
        """
        return self._sync(self._update_plan(config, values, as_node, task_id))

    # ---------------------------------------------------------------------------- public: async

    async def ainvoke(
        self,
        input: Any,
        config: Any = None,
        *,
        context: Any = None,
        stream_mode: str = "values",
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """:meth:`invoke` with an ``AsyncTaskHubGrpcClient``.

        Args:
            input: As for :meth:`invoke`.
            config: As for :meth:`invoke`.
            context: As for :meth:`invoke`.
            stream_mode: As for :meth:`invoke`.
            interrupt_before: As for :meth:`invoke`.
            interrupt_after: As for :meth:`invoke`.
            timeout: As for :meth:`invoke`.
        """
        options = {"context": context, "interrupt_before": interrupt_before, "interrupt_after": interrupt_after}
        if stream_mode != "values":
            return [c async for c in self.astream(input, config, stream_mode=stream_mode, timeout=timeout, **options)]
        return await self._async(self._run_plan(input, config, ["values", "updates"], True, timeout, **options))

    async def astream(
        self,
        input: Any,
        config: Any = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] | None = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        subgraphs: bool = False,
        timeout: float | None = None,
    ) -> AsyncIterator[Any]:
        """:meth:`stream` with an ``AsyncTaskHubGrpcClient``.

        Args:
            input: As for :meth:`stream`.
            config: As for :meth:`stream`.
            context: As for :meth:`stream`.
            stream_mode: As for :meth:`stream`.
            interrupt_before: As for :meth:`stream`.
            interrupt_after: As for :meth:`stream`.
            subgraphs: As for :meth:`stream`.
            timeout: As for :meth:`stream`.
        """
        mode, modes = self._modes(stream_mode)
        options = {"context": context, "interrupt_before": interrupt_before, "interrupt_after": interrupt_after}
        plan = self._run_plan(input, config, modes, False, timeout, subgraphs=subgraphs, **options)
        async for chunk in self._aiterate(plan):
            for item in _format([chunk], mode, subgraphs):
                yield item

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """:meth:`get_state` with an ``AsyncTaskHubGrpcClient``.

        Args:
            config: As for :meth:`get_state`.
            subgraphs: As for :meth:`get_state`.
        """
        return self._local(await self._async(self._saver_plan(config, False))).get_state(config, subgraphs=subgraphs)

    async def aget_state_history(
        self, config: Any, *, filter: dict[str, Any] | None = None, before: Any = None, limit: int | None = None
    ) -> AsyncIterator[Any]:
        """:meth:`get_state_history` with an ``AsyncTaskHubGrpcClient``.

        Args:
            config: As for :meth:`get_state_history`.
            filter: As for :meth:`get_state_history`.
            before: As for :meth:`get_state_history`.
            limit: As for :meth:`get_state_history`.
        """
        local = self._local(await self._async(self._saver_plan(config, True)))
        for snapshot in local.get_state_history(config, filter=filter, before=before, limit=limit):
            yield snapshot

    async def asubmit(self, kind: str, body: dict[str, Any], config: Any, *, request_id: str | None = None) -> str:
        """Deliver a request to the config's thread without waiting for its result; returns the request's ID.

        For a caller that follows the result on the thread's durable stream itself (LangGraph's server): ``kind``
        is ``run`` (a body from ``run_body``), ``update`` or ``cancel`` (``{"target": run_id}``: the run ends at
        once if it is in progress, or never starts).

        Args:
            kind: The request's kind.
            body: The request's body.
            config: A LangGraph config naming the thread.
            request_id: The request's ID (a fresh one when ``None``); its items on the stream carry it.
        """
        result: str = await self._async(self._submit_plan(kind, body, config, request_id))
        return result

    async def aprune_thread(self, config: Any) -> None:
        """Keep only the latest checkpoint of the config's thread (LangGraph server's ``prune`` ``keep_latest``).

        Args:
            config: A LangGraph config naming the thread.

        Raises:
            GraphRunError: The thread cannot be pruned (its graph has DeltaChannels, which need every checkpoint).
        """
        await self._async(self._prune_plan(config))

    async def acopy_thread(self, source: Any, target: Any) -> None:
        """Copy the checkpoints of ``source`` 's thread to the new thread of ``target`` (LangGraph server's copy).

        Args:
            source: A config naming the thread to copy.
            target: A config naming a thread that does not exist yet.

        Raises:
            ValueError: The target thread exists.
        """
        await self._async(self._copy_plan(source, target))

    async def abulk_update_state(self, config: Any, supersteps: Any) -> Any:
        """LangGraph's ``bulk_update_state``: each superstep's ``StateUpdate`` s applied together, in the thread's
        orchestration; returns the new config.

        Args:
            config: A LangGraph config naming the thread (and optionally the checkpoint to start from).
            supersteps: A sequence of supersteps, each a sequence of ``langgraph.types.StateUpdate``.
        """
        return await self._async(self._update_plan(config, None, None, None, supersteps))

    async def aupdate_state(
        self, config: Any, values: Any, as_node: str | None = None, task_id: str | None = None
    ) -> Any:
        """:meth:`update_state` with an ``AsyncTaskHubGrpcClient``.

        Args:
            config: As for :meth:`update_state`.
            values: As for :meth:`update_state`.
            as_node: As for :meth:`update_state`.
            task_id: As for :meth:`update_state`.
        """
        return await self._async(self._update_plan(config, values, as_node, task_id))
