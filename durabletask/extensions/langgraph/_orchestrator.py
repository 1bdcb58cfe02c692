"""The orchestrator of one LangGraph thread: runs, state reads and updates arrive as events and run in order.

Each run is :func:`_driver.drive_run`, its tasks scheduled as activities (all of a superstep at once, in
LangGraph's task order). The thread's checkpoints live in a :class:`ReplaySaver` rebuilt by replay. A request's
result, and a streaming run's chunks, are published to the instance's durable stream (``_delivery``); requests from
clients that predate that find their result in the custom status, which keeps the last few results by request ID.

Each run or update ends its execution: the thread continues as new, carrying its checkpoints and the graph that
wrote them. A waiting thread's history therefore holds no graph's work, and a worker with another graph can take the
next request: it runs it if the thread's checkpoints suit its graph, or refuses it, and the thread waits on.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime, timezone
from typing import Any

from langgraph.channels.delta import DeltaChannel
from langgraph.types import StateUpdate

from durabletask import task as dt
from durabletask._errors import PayloadTooLargeError
from durabletask._replay.failures import qualified_name
from durabletask.extensions.langgraph import _internals as lg
from durabletask.extensions.langgraph._changes import describe, incompatible
from durabletask.extensions.langgraph._delivery import Outbox
from durabletask.extensions.langgraph._driver import (
    Chunk,
    RunSpec,
    TaskCall,
    TaskOutcome,
    drive_run,
    dts_retry,
    invoke_output,
)
from durabletask.extensions.langgraph._errors import GraphMismatchError, ResumeRejectedError
from durabletask.extensions.langgraph._naming import (
    RUN_EVENT,
    STREAMED,
    activity_name,
    code_identity,
    orchestrator_name,
    shape,
)
from durabletask.extensions.langgraph._records import record_id, values_fields
from durabletask.extensions.langgraph._records_effects import ROLLBACK, run_update
from durabletask.extensions.langgraph._resume import refuse_unwaited_resume
from durabletask.extensions.langgraph._saver import ReplaySaver
from durabletask.extensions.langgraph._serde import dump, load

# Results kept in the custom status, so a client whose request was followed by others still finds its own.
KEEP_RESULTS = 8
# Activities after which the thread continues as new at its next run boundary, to bound its history.
TASKS_PER_EXECUTION = 500
# Cancelled run IDs remembered (a cancel may arrive before the run it names).
KEEP_CANCELLED = 256


class RunCancelled(Exception):
    """The run in progress was cancelled by a ``cancel`` request: it ends at once, keeping what it committed
    (``rollback``: the thread goes back to its checkpoints from before the run)."""

    def __init__(self, run_id: str, rollback: bool) -> None:
        super().__init__(run_id)
        self.rollback = rollback


def pending_interrupts(graph: Any, saver: ReplaySaver, thread_id: str) -> list[str]:
    """The IDs of the interrupts the thread's latest checkpoint waits on."""
    snapshot = graph.copy(update={"checkpointer": saver}).get_state({"configurable": {"thread_id": thread_id}})
    return [i.id for i in snapshot.interrupts]


def check_resume(graph: Any, saver: ReplaySaver, thread_id: str, value: Any, checkpoint_id: str | None) -> None:
    """Refuse a resume that nothing waits for, or one naming interrupts that are not pending."""
    refuse_unwaited_resume(value, checkpoint_id, thread_id, lambda: pending_interrupts(graph, saver, thread_id))


class ForeignGraphError(GraphMismatchError):
    """A request this execution accepted under another graph, replayed by a worker running a different one.

    The run cannot be replayed with this graph, nor refused after the fact: it fails, and the thread starts again
    from the checkpoints it had before that run (the execution's input) on its next request.
    """


class _LiveRun:
    """A streaming run's chunks on their way out: the loop's, published after each superstep (numbered), and the
    number each task is given, so the client yields the task's chunks after the loop's that precede them."""

    def __init__(self, request_id: str, spec: RunSpec) -> None:
        self.request_id = request_id
        self.modes = set(spec.stream_modes)
        self.sent = 0  # chunks of the run already looked at
        self.seq = 0  # the loop's chunk messages published

    def flush(self, out: Outbox, chunks: list[Chunk]) -> Generator[Any, Any, None]:
        new = [(ns, mode, payload) for ns, mode, payload in chunks[self.sent :] if mode in self.modes]
        self.sent = len(chunks)
        if new:
            self.seq += 1
            yield from out.send(self.request_id, "chunks", self.seq, {"c": dump(new, "the run's stream chunks")})

    def mark(self, calls: list[TaskCall]) -> None:
        for call in calls:
            if call.payload.get("stream"):
                call.payload["live"] = {"r": self.request_id, "s": self.seq}


class ThreadRuntime:
    """One thread's orchestration: its saver, id source, results, and the handling of each request."""

    def __init__(self, ctx: Any, graph: Any, graph_name: str, fingerprint: str, carry: dict[str, Any] | None) -> None:
        carry = carry or {}
        self.ctx = ctx
        self.graph = graph
        self.graph_name = graph_name
        self.fingerprint = fingerprint
        self.saver = ReplaySaver.restore(carry.get("saver"))
        self.ids = lg.IdSource(ctx.instance_id, carry.get("counter", 0), clock=lambda: ctx.current_utc_datetime)
        self.done: list[list[Any]] = carry.get("done", [])
        self.thread_id: str | None = carry.get("thread_id")
        # The graph the checkpoints were written by ({"fp", "shape"}), the interrupts it left pending, queued requests.
        self.written_by: dict[str, Any] | None = carry.get("graph")
        self.interrupts: list[str] | None = carry.get("interrupts")
        self.tasks_run = 0
        self.tasks_carried: int = carry.get("tasks", 0)
        # Requests that arrived during a run (state reads are answered at once, the rest wait their turn),
        # and the one event wait kept open across both (a second wait would take events out of order).
        self.queue: list[dict[str, Any]] = list(carry.get("queue", []))
        self.cancelled: list[str] = list(carry.get("cancelled", []))
        self.current: str | None = None
        self.cancellable = False  # the run in progress came from a server that may cancel it
        # The checkpoints this execution started with, and how many runs and updates it has handled: a run that
        # is the first of its execution is rolled back by going back to them.
        self.initial_saver: dict[str, str] | None = carry.get("saver")
        self.writes_done = 0
        self.listener: Any = None
        self.live: dict[str, Any] | None = None
        self.run_started_from: str | None = None
        self.out = Outbox(ctx)
        # Names this instance's stream for clients that remember where they read it (a purged and recreated
        # instance has a new stream, and a new epoch).
        self.epoch: str = carry.get("epoch") or str(ctx.new_uuid())
        self.status: dict[str, Any] = {}
        self._set_status([])

    @property
    def thread_fingerprint(self) -> str:
        """The fingerprint of the graph the thread's checkpoints belong to (this worker's for a thread without)."""
        return self.written_by["fp"] if self.written_by else self.fingerprint

    def _latest_checkpoint_id(self) -> str | None:
        root = self.saver.storage[self.thread_id or ""][""] if self.thread_id else {}
        return max(root) if root else None

    def prune(self) -> None:
        """Forget all but the last run's checkpoints, before the thread continues as new.

        Not with DeltaChannels: their values are rebuilt from the writes of every ancestor checkpoint.
        """
        if self.thread_id and not any(isinstance(spec, DeltaChannel) for spec in self.graph.channels.values()):
            self.saver.forget_before(self.thread_id, self.run_started_from)

    def carry(self) -> dict[str, Any]:
        return {
            "saver": self.saver.export(),
            "counter": self.ids.counter,
            "done": self.done,
            "thread_id": self.thread_id,
            "graph": self.written_by,
            "interrupts": self.interrupts,
            "queue": self.queue,
            "tasks": self.tasks_carried + self.tasks_run,
            "epoch": self.epoch,
            **({"cancelled": self.cancelled} if self.cancelled else {}),
        }

    def _pending(self) -> list[str]:
        if self.interrupts is not None:  # what the thread's own graph found when it last ran it
            return self.interrupts
        return pending_interrupts(self.graph, self.saver, self.thread_id) if self.thread_id else []

    def _set_status(self, interrupts: list[str]) -> None:
        self.status = {
            "fp": self.thread_fingerprint,
            "done": self.done,
            "interrupts": interrupts,
            "via": STREAMED,
            "epoch": self.epoch,
        }

    def publish(self) -> None:
        self._set_status(self._pending())
        self.ctx.set_custom_status(self.status)

    def seal(self) -> bool:
        """End this execution after a run or update: the thread continues as new, carrying what it holds.

        Checkpoints too large to carry are pruned to the last run's, then to the latest one; a thread whose latest
        checkpoint alone is too large (or whose DeltaChannels need every ancestor) stays in this execution.
        """
        if self.tasks_carried + self.tasks_run >= TASKS_PER_EXECUTION:
            self.prune()
            self.tasks_carried, self.tasks_run = 0, 0
        self.publish()
        deltas = any(isinstance(spec, DeltaChannel) for spec in self.graph.channels.values())
        for fallback in (self.prune, lambda: self.saver.forget_before(self.thread_id or "", None), None):
            try:
                self.ctx.continue_as_new({"v": 2, "carry": self.carry()}, save_events=True)
                return True
            except PayloadTooLargeError:
                if fallback is None or deltas or not self.thread_id:
                    return False
                fallback()
        return False

    def _admit(self, request: dict[str, Any], fresh: bool) -> None:
        """Raise unless this worker's graph may run ``request`` on the thread's checkpoints.

        A request sent with another graph than this worker's is refused, or, when this execution had accepted it
        (a replay), fails the run. The thread goes on under a changed graph only across changes that keep its
        checkpoints meaningful (see ``_changes.incompatible``).
        """
        sent = request.get("shape")
        if request.get("fp") != self.fingerprint:
            change = describe(sent, shape(self.graph)) if sent else "its nodes, edges or channels differ"
            text = (
                f"graph '{self.graph_name}' sent by the client (fingerprint {request.get('fp')}) differs from the "
                f"graph the workers run (fingerprint {self.fingerprint}): {change}"
            )
            raise (GraphMismatchError if fresh else ForeignGraphError)(text)
        written = self.written_by
        if written and written["fp"] != self.fingerprint and (problems := incompatible(written["shape"], sent or {})):
            raise GraphMismatchError(
                f"thread '{self.thread_id}' waits under an earlier graph '{self.graph_name}' (fingerprint "
                f"{written['fp']}) that the graph the workers and the client run cannot take over: "
                f"{'; '.join(problems)}. Serve the earlier graph again to go on with this thread"
            )

    def _admit_read(self, request: dict[str, Any]) -> None:
        """Refuse a state read from a client whose graph is not the one the thread's checkpoints belong to."""
        if request.get("fp") == self.thread_fingerprint:
            return
        written, sent = self.written_by, request.get("shape")
        change = describe(written["shape"], sent) if written and sent else "its nodes, edges or channels differ"
        raise GraphMismatchError(
            f"thread '{self.thread_id}' belongs to graph '{self.graph_name}' with fingerprint "
            f"{self.thread_fingerprint}; the client's graph (fingerprint {request.get('fp')}) cannot read its "
            f"checkpoints: {change}"
        )

    def publish_progress(self, request_id: str, chunks: list[Chunk]) -> None:
        """The chunks a run streamed through the custom status has emitted so far, for its client to yield."""
        self.live = {"id": request_id, "chunks": dump(chunks, "a stream chunk")}
        self.ctx.set_custom_status({**self.status, "live": self.live})

    def answer(self, request: dict[str, Any], result: dict[str, Any]) -> Generator[Any, Any, None]:
        """Deliver a request's result: on the stream, or in the custom status to a client that reads it there."""
        if request.get("via") == STREAMED:
            yield from self.out.send(request["id"], "result", 0, result)
        else:
            self.done = [*self.done, [request["id"], result]][-KEEP_RESULTS:]

    def _record_failure(self, request: dict[str, Any]) -> Generator[Any, Any, None]:
        """Keep the checkpoints of a run that failed: on the stream (the status says so), or in the status for a
        client that reads it there."""
        if request.get("via") == STREAMED:
            yield from self.out.send(request["id"], "failed", 0, self.carry())
            self.ctx.set_custom_status({**self.status, "failed_on_stream": True})
        else:
            self.ctx.set_custom_status({**self.status, "failed": self.carry()})

    def handle(self, request: dict[str, Any], fresh: bool = True) -> Generator[Any, Any, None]:
        """Run one request and record its result; a failed run raises (and so fails the orchestration).

        ``fresh``: the request arrives now, not in a replay of this execution.
        """
        body = load(request["body"])
        self.thread_id = body["thread_id"]
        kind = request["kind"]
        if kind == "cancel":
            self.cancel(str(body.get("target")))
            return
        if kind == "run" and (request["id"] in self.cancelled or request.get("cancelled")):  # before its turn came
            self.notify(body, request["id"], "interrupted")
            yield from self.answer(request, {"cancelled": True})
            return
        self.current = request["id"]
        if kind == "run" and not body.get("not_before"):  # a delayed run says it runs once its time has come
            self.notify(body, request["id"], "running")
        result, status = yield from self._outcome(request, body, fresh)
        self.current = None
        if kind != "state":
            self.notify(body, request["id"] if kind == "run" else None, status)
        yield from self.answer(request, result)
        self.live = None

    def _outcome(
        self, request: dict[str, Any], body: dict[str, Any], fresh: bool
    ) -> Generator[Any, Any, tuple[dict[str, Any], str]]:
        """The request's result and the status its run ends with; a failed run raises after recording itself."""
        kind = request["kind"]
        try:
            if kind == "state":
                self._admit_read(request)
                return {"saver": self._export_state(body)}, "success"
            if kind == "prune":
                self._admit_read(request)
                return self._prune(), "success"
            if kind not in ("run", "update"):
                raise ValueError(f"unknown request kind '{kind}'")
            self._admit(request, fresh)
            try:
                result = (yield from self._run(request, body)) if kind == "run" else self._update(body)
                status = "success"
            except RunCancelled as cancelled:
                if cancelled.rollback and self.writes_done == 0:
                    self.saver = ReplaySaver.restore(self.initial_saver)
                result, status = {"cancelled": True}, (ROLLBACK if cancelled.rollback else "interrupted")
            finally:
                self.writes_done += 1
            self.written_by = {"fp": self.fingerprint, "shape": request.get("shape") or shape(self.graph)}
            self.interrupts = pending_interrupts(self.graph, self.saver, self.thread_id or "")
            return result, status
        except ForeignGraphError:
            # Raised while this execution replays: what is published then goes nowhere, so the status keeps them.
            self.ctx.set_custom_status({**self.status, "failed": self.carry()})
            raise
        except (ResumeRejectedError, GraphMismatchError) as refused:
            return {"refused": {"type": type(refused).__name__, "message": str(refused)}}, "error"
        except Exception as failed:
            if kind != "run":  # a bad update or read is refused; the thread goes on
                return {"refused": {"type": qualified_name(type(failed)), "message": str(failed)}}, "error"
            # The run failed, and with it this execution. Its checkpoints (with the failed task's error)
            # are kept: state views read them, and the next run starts from them.
            self.notify(body, request["id"], "error", f"{qualified_name(type(failed))}: {failed}")
            yield from self._record_failure(request)
            raise failed

    def cancel(self, target: str) -> None:
        """A ``cancel`` request for a run that is not in progress: a queued one is recorded ``interrupted`` at once
        and, when its turn comes, ends without running (so its end takes its place on the thread's stream, after
        the runs ahead of it); a later one is skipped."""
        self.cancelled = [*self.cancelled, target][-KEEP_CANCELLED:]
        for queued in [r for r in self.queue if r.get("id") == target and r.get("kind") == "run"]:
            queued["cancelled"] = True
            self.notify(load(queued["body"]), target, "interrupted")

    def notify(
        self, body: dict[str, Any], run_id: str | None, status: str, error: str | None = None, *, thread: bool = True
    ) -> None:
        """Record a server run's status (and, once it ends, the thread's values unless ``thread`` is false) in the
        thread's record entity."""
        if not body.get("record") or not self.thread_id:
            return
        now = self.ctx.current_utc_datetime
        at = (now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)).isoformat()
        data: dict[str, Any] = {"at": at, "thread_id": self.thread_id}
        if run_id is not None:
            data["run"] = run_update(run_id, status, at, error)
        if thread:
            data["thread"] = {"status": "busy"} if status == "running" else self._thread_fields(status)
        self.ctx.signal_entity(record_id(self.thread_id), "run", data)

    def _thread_fields(self, status: str) -> dict[str, Any]:
        """The thread's status, values and pending interrupts, as its record keeps them."""
        config = {"configurable": {"thread_id": self.thread_id}}
        interrupts: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        pending: tuple[str, ...] = ()
        try:
            snapshot = self.graph.copy(update={"checkpointer": self.saver}).get_state(config)
            interrupts = {task.id: list(task.interrupts) for task in snapshot.tasks if task.interrupts}
            pending = tuple(snapshot.next)
            fields = values_fields(dump(snapshot.values, "the values"), dump(interrupts, "the interrupts"))
        except Exception:  # the record goes without values rather than failing the thread
            fields = {}
        waiting = bool(interrupts) or (status == "success" and bool(pending))
        thread_status = "error" if status == "error" else "interrupted" if waiting else "idle"
        return {"status": thread_status, **fields}

    def _run(self, request: dict[str, Any], body: dict[str, Any]) -> Generator[Any, Any, dict[str, Any]]:
        request_id = request["id"]
        spec = RunSpec(**body["spec"])
        self.cancellable = bool(body.get("record"))
        if body.get("not_before"):
            yield from self._wait_until(str(body["not_before"]))
            self.notify(body, request_id, "running")
        self.run_started_from = self._latest_checkpoint_id()
        check_resume(self.graph, self.saver, self.thread_id or "", spec.input, spec.checkpoint_id)
        emitted: list[Chunk] = []
        gen = drive_run(
            self.graph,
            self.saver,
            self.thread_id or "",
            spec,
            graph_name=self.graph_name,
            instance_id=self.ctx.instance_id,
            chunks=emitted,
            run_id=request_id,
        )
        # A streaming run's chunks go out as they come: the loop's after each superstep, the nodes' from their tasks.
        live = None if body.get("invoke") or request.get("via") != STREAMED else _LiveRun(request_id, spec)
        sent: list[TaskOutcome] | None = None
        while True:
            with lg.deterministic_ids(self.ids):
                try:
                    calls = gen.send(sent)  # type: ignore[arg-type]
                except StopIteration as stop:
                    outcome = stop.value
                    break
            if live is not None:
                yield from live.flush(self.out, emitted)
                live.mark(calls)
            elif not body.get("invoke"):
                self.publish_progress(request_id, self._wanted(emitted, spec))
            sent = yield from self._execute(calls)
        if live is not None:  # a stream yields what the run emitted before it ends, or raises
            yield from live.flush(self.out, outcome.chunks)
        if outcome.error is not None:
            if not body.get("invoke") and live is None:  # a client reading the custom status gets them there
                self.status["live"] = {"id": request_id, "chunks": dump(self._wanted(outcome.chunks, spec), "chunks")}
            raise outcome.error
        if body.get("invoke"):
            return {"output": dump(invoke_output(outcome.chunks), "the run's output")}
        if live is not None:
            return {}
        return {"chunks": dump(self._wanted(outcome.chunks, spec), "the run's stream")}

    @staticmethod
    def _wanted(chunks: list[Chunk], spec: RunSpec) -> list[Chunk]:
        return [(ns, mode, payload) for ns, mode, payload in chunks if mode in spec.stream_modes]

    def _export_state(self, body: dict[str, Any]) -> dict[str, str]:
        """The checkpoints a state read needs: the whole history, or one checkpoint for ``get_state``.

        DeltaChannels are rebuilt from every ancestor, so a graph with them always sends the whole history.
        """
        deltas = any(isinstance(spec, DeltaChannel) for spec in self.graph.channels.values())
        if body.get("history", True) or deltas or not self.thread_id:
            return self.saver.export()
        return self.saver.export_checkpoint(self.thread_id, body.get("checkpoint_id"))

    def next_request(self) -> Any:
        """The task that completes with the next request (the same one until it has)."""
        if self.listener is None:
            self.listener = self.ctx.wait_for_external_event(RUN_EVENT)
        return self.listener

    def _take_request(self) -> dict[str, Any]:
        request: dict[str, Any] = self.listener.get_result()
        self.listener = None
        return request

    def _prune(self) -> dict[str, Any]:
        """Keep only the thread's latest checkpoint (and what it needs): LangGraph server's ``keep_latest``."""
        if any(isinstance(spec, DeltaChannel) for spec in self.graph.channels.values()):
            raise ValueError("a thread whose graph has DeltaChannels needs every checkpoint: it cannot be pruned")
        if self.thread_id:
            self.saver.forget_before(self.thread_id, None)
        return {}

    def _wait_until(self, not_before: str) -> Generator[Any, Any, None]:
        """A delayed run's wait (a durable timer), taking requests meanwhile: a cancel of the run ends it."""
        due = datetime.fromisoformat(not_before)
        now = self.ctx.current_utc_datetime
        if due.tzinfo is not None and now.tzinfo is None:
            due = due.astimezone(timezone.utc).replace(tzinfo=None)
        if due <= now:
            return
        timer = self.ctx.create_timer(due)
        while not timer.is_complete:
            listener = self.next_request()
            yield dt.when_any([timer, listener])
            if listener.is_complete:
                yield from self._arrived_during_run(self._take_request())

    def _arrived_during_run(self, request: dict[str, Any]) -> Generator[Any, Any, None]:
        """Answer a state read at once (from the last finished superstep), take a cancel; queue anything else."""
        if request.get("kind") == "cancel":
            body = load(request["body"])
            target = str(body.get("target"))
            if target == self.current:
                raise RunCancelled(target, bool(body.get("rollback")))
            self.cancel(target)
            return
        if request.get("kind") == "run" and (body := load(request["body"])).get("reject_if_busy"):
            # A server's multitask_strategy "reject" that another server's run beat to the thread: refused here.
            message = f"thread '{self.thread_id}' is busy with run '{self.current}' (multitask_strategy reject)"
            self.notify(body, request["id"], "error", f"ThreadBusyError: {message}", thread=False)
            yield from self.answer(request, {"refused": {"type": "ThreadBusyError", "message": message}})
            return
        if request.get("kind") != "state" or request.get("fp") != self.thread_fingerprint:
            self.queue.append(request)
            return
        yield from self.answer(request, {"saver": self._export_state(load(request["body"]))})
        if request.get("via") != STREAMED:
            self.status["done"] = self.done
            self.ctx.set_custom_status(self.status)

    def _execute(self, calls: list[TaskCall]) -> Generator[Any, Any, list[TaskOutcome]]:
        # A server's run can be cancelled: its tasks are cancellable calls, so a node that heartbeats stops.
        options: dict[str, Any] = {"cancellation": dt.ActivityCancellation.TRY_CANCEL} if self.cancellable else {}
        scheduled = [
            self.ctx.call_activity(
                activity_name(self.graph_name, call.node),
                input=call.payload,
                retry_policy=dts_retry(call.retry_policy),
                **options,
            )
            for call in calls
        ]
        self.tasks_run += len(scheduled)
        outcomes = []
        for pending in scheduled:
            while not pending.is_complete:
                listener = self.next_request()
                yield dt.when_any([pending, listener])
                if listener.is_complete:
                    try:
                        yield from self._arrived_during_run(self._take_request())
                    except RunCancelled:
                        for running in scheduled:
                            if self.cancellable and not running.is_complete:
                                running.cancel()
                        raise
            try:
                payload = pending.get_result()
            except dt.TaskFailedError as failed:
                outcomes.append(
                    TaskOutcome([], error={"type": failed.details.error_type, "message": failed.details.message})
                )
            else:
                outcomes.append(TaskOutcome.from_payload(payload))
        return outcomes

    def _update(self, body: dict[str, Any]) -> dict[str, Any]:
        config: dict[str, Any] = {"configurable": {**body.get("configurable", {}), "thread_id": self.thread_id}}
        if body.get("checkpoint_id"):
            config["configurable"]["checkpoint_id"] = body["checkpoint_id"]
        local = self.graph.copy(update={"checkpointer": self.saver})
        with lg.deterministic_ids(self.ids):
            if body.get("supersteps") is not None:  # LangGraph's bulk_update_state: each superstep's updates at once
                steps = [[StateUpdate(*update) for update in step] for step in body["supersteps"]]
                updated = local.bulk_update_state(config, steps)
            else:
                updated = local.update_state(
                    config, body.get("values"), as_node=body.get("as_node"), task_id=body.get("task_id")
                )
        return {"config": dump(updated, "the updated config")}


def thread_orchestrator(graph: Any, graph_name: str, fingerprint: str) -> Any:
    """The orchestrator function for every thread of ``graph``."""

    def langgraph_thread(ctx: Any, payload: dict[str, Any]) -> Generator[Any, Any, None]:
        thread = ThreadRuntime(ctx, graph, graph_name, fingerprint, payload.get("carry"))
        # Executions started before each run or update ended its execution ("v" absent) replay as they ran:
        # several requests each. They take the new form at their next request that is not a replay.
        legacy = payload.get("v") != 2
        request = payload.get("request")
        fresh = not ctx.is_replaying
        while True:
            if request is None and thread.queue:
                request, fresh = thread.queue.pop(0), not ctx.is_replaying
            if request is None:
                if legacy and thread.tasks_run >= TASKS_PER_EXECUTION:
                    thread.prune()
                    ctx.continue_as_new({"carry": thread.carry()}, save_events=True)
                    return
                thread.publish()
                request = yield thread.next_request()
                thread.listener = None
                fresh = not ctx.is_replaying
            yield from thread.handle(request, fresh)
            if request.get("kind") not in ("state", "cancel") and (fresh or not legacy) and thread.seal():
                return
            request = None

    langgraph_thread.__durabletask_name__ = orchestrator_name(graph_name)  # type: ignore[attr-defined]
    langgraph_thread.__wrapped__ = code_identity(graph_name, fingerprint)  # type: ignore[attr-defined]
    return langgraph_thread
