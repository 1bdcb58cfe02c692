"""The client's side of a thread, without I/O: requests to send, and the plan that sends one and waits for it.

A plan is a generator of :class:`Op` s (read the instance, start it, raise the event, follow its durable stream,
sleep); the sync and async façades in ``_client`` only carry them out, so both share every rule here.

A request's result and a streaming run's chunks arrive on the instance's durable stream (``_delivery``). A thread
whose status says its workers answer in the custom status (workers from before durable streams) is asked the old
way, and its status is read every ``poll_interval`` for the answer.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from durabletask._instance_models import OrchestrationState, OrchestrationStatus
from durabletask.extensions.langgraph._delivery import Assembly, LastFailure
from durabletask.extensions.langgraph._errors import (
    GraphMismatchError,
    GraphNotRegisteredError,
    GraphRunError,
    GraphTimeoutError,
    LangGraphError,
    ResumeRejectedError,
)
from durabletask.extensions.langgraph._naming import (
    RUN_EVENT,
    STREAMED,
    instance_id,
    legacy_instance_id,
    orchestrator_name,
    shape_fingerprint,
)
from durabletask.extensions.langgraph._resume import refuse_unwaited_resume
from durabletask.extensions.langgraph._serde import dump, load

# Configurable keys a run reads from the config itself (the rest pass to the nodes).
_COORDINATES = ("thread_id", "checkpoint_id", "checkpoint_ns")
_REFUSALS: dict[str, type[LangGraphError]] = {
    "ResumeRejectedError": ResumeRejectedError,
    "GraphMismatchError": GraphMismatchError,
}


@dataclass(frozen=True)
class Op:
    """One thing a plan needs done: ``get`` / ``start`` / ``restart`` (a failed thread) / ``raise_event`` /
    ``sleep``; ``emit`` stream chunks; ``subscribe`` to the instance's stream (``data``: ``after`` and
    ``timeout``, replacing the plan's earlier subscription) and take its ``next`` item (``None`` once the
    subscription has ended or timed out)."""

    kind: str
    instance_id: str = ""
    data: Any = None


def request(kind: str, graph_shape: dict[str, Any], thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request for the thread's orchestrator, with a fresh ID the client waits for.

    It names the client's graph (its fingerprint and shape), so the orchestrator can say what differs from its own.
    """
    payload = {"thread_id": thread_id, **body}
    return {
        "id": uuid.uuid4().hex,
        "kind": kind,
        "fp": shape_fingerprint(graph_shape),
        "shape": graph_shape,
        "body": dump(payload, f"the {kind} request"),
    }


def start_input(req: dict[str, Any], carry: dict[str, Any] | None = None) -> dict[str, Any]:
    """The input of a thread's orchestration that starts with ``req`` (after a failure, from ``carry``)."""
    return {"v": 2, "request": req, **({"carry": carry} if carry is not None else {})}


def user_configurable(config: Any) -> dict[str, Any]:
    configurable = dict((config or {}).get("configurable") or {})
    ns = configurable.get("checkpoint_ns")
    if ns:
        raise ValueError(f"checkpoint_ns '{ns}': only the root graph's namespace ('') is supported")
    return {k: v for k, v in configurable.items() if k not in _COORDINATES}


def run_body(
    input: Any,
    config: Any,
    *,
    stream_modes: list[str],
    invoke: bool,
    context: Any,
    interrupt_before: Any,
    interrupt_after: Any,
    subgraphs: bool = False,
) -> dict[str, Any]:
    configurable = (config or {}).get("configurable") or {}
    spec = {
        "input": input,
        "configurable": user_configurable(config),
        "checkpoint_id": configurable.get("checkpoint_id"),
        "stream_modes": tuple(stream_modes),
        "interrupt_before": interrupt_before,
        "interrupt_after": interrupt_after,
        "recursion_limit": (config or {}).get("recursion_limit"),
        "context": context,
        "subgraphs": subgraphs,
    }
    if metadata := (config or {}).get("metadata"):  # left out when empty: a worker that predates it reads the rest
        spec["metadata"] = dict(metadata)
    return {"spec": spec, "invoke": invoke}


def check_resume_locally(input: Any, checkpoint_id: Any, status: dict[str, Any] | None, thread_id: str) -> None:
    """Refuse before sending a resume the thread's last published state cannot take."""
    refuse_unwaited_resume(input, checkpoint_id, thread_id, lambda: (status or {}).get("interrupts") or [])


def _status(state: OrchestrationState | None) -> dict[str, Any] | None:
    if state is None or state.serialized_custom_status is None:
        return None
    found = state.get_custom_status()
    return found if isinstance(found, dict) else None


def _ended(state: OrchestrationState, graph_name: str) -> LangGraphError:
    details = state.failure_details
    if state.runtime_status == OrchestrationStatus.FAILED and details is not None:
        if details.error_type.endswith("OrchestratorNotRegisteredError"):
            return GraphNotRegisteredError(f"no worker registered graph '{graph_name}': {details.message}")
        return GraphRunError(details.error_type, details.message, state.instance_id)
    return GraphRunError("ThreadEnded", f"the thread's orchestration is {state.runtime_status}", state.instance_id)


_TERMINAL = (
    OrchestrationStatus.FAILED,
    OrchestrationStatus.TERMINATED,
    OrchestrationStatus.COMPLETED,
    OrchestrationStatus.CANCELED,
)


class Cursors:
    """Where this client last read each thread's stream, so a new request's subscription starts there rather than
    at the stream's first item. Kept per stream epoch (the thread's status names it): a purged and recreated
    instance has a new stream, where an old cursor means nothing.

    A cursor is read before the request is sent and was delivered before that, so it precedes the request's items.
    """

    LIMIT = 4096  # threads remembered; the oldest is forgotten first

    def __init__(self) -> None:
        self._last: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()

    def start(self, instance_id: str, epoch: str | None) -> str | None:
        with self._lock:
            known = self._last.get(instance_id)
        return known[1] if epoch is not None and known is not None and known[0] == epoch else None

    def note(self, instance_id: str, epoch: str | None, cursor: str | None) -> None:
        if epoch is None or cursor is None:
            return
        with self._lock:
            self._last.pop(instance_id, None)
            self._last[instance_id] = (epoch, cursor)
            if len(self._last) > self.LIMIT:
                self._last.pop(next(iter(self._last)))


@dataclass(frozen=True)
class Waiting:
    """How long a new thread may wait for a worker, how often a thread answering in its status is read, and
    where this client last read each thread's stream."""

    start_timeout: float
    poll_interval: float
    cursors: Cursors = field(default_factory=Cursors)


# Seconds between restarts of a thread that a worker without its graph failed, while the request waits.
RESTART_EVERY = 1.0


@dataclass
class _Wait:
    """One request's wait: since when, until when (``timeout``), and what it has handed out and retried."""

    instance_id: str
    graph_name: str
    req: dict[str, Any]
    waiting: Waiting
    timeout: float | None
    since: float
    seen: int = 0
    restarted: float = 0.0
    running: bool = False  # a worker has taken the thread up since the request was sent

    def elapsed(self) -> float:
        return time.monotonic() - self.since

    def window(self) -> float | None:
        """How long the next subscription may wait before the plan looks at the instance (``None``: no limit)."""
        limits = []
        if self.timeout is not None:
            limits.append(self.timeout - self.elapsed())
        if not self.running:
            limits.append(self.waiting.start_timeout - self.elapsed())
        # a little past the limit, so that the look that follows finds it passed
        return None if not limits else max(0.0, min(limits)) + 0.05

    def expired(self, state: OrchestrationState | None, status: dict[str, Any]) -> LangGraphError | None:
        """The error to raise once the request has waited too long, saying what it waited for."""
        pending = state is None or state.runtime_status == OrchestrationStatus.PENDING
        if pending and self.elapsed() > self.waiting.start_timeout:
            return GraphNotRegisteredError(
                f"no worker picked up graph '{self.graph_name}' (orchestrator "
                f"'{orchestrator_name(self.graph_name)}') within {self.waiting.start_timeout:g} s: is the graph "
                "registered with register_graph on a running worker?"
            )
        if self.timeout is None or self.elapsed() <= self.timeout:
            return None
        thread = load(self.req["body"])["thread_id"]
        if pending:
            doing = f"no worker serving graph '{self.graph_name}' has picked the thread up"
        elif self.seen or (status.get("live") or {}).get("id") == self.req["id"]:
            doing = "the run is in progress (its stream has chunks)"
        else:
            doing = (
                f"the thread's orchestration is {state.runtime_status.name if state else 'missing'} and has not "
                f"answered: no worker serving graph '{self.graph_name}' is running, or the request runs or waits "
                "behind others"
            )
        return GraphTimeoutError(
            f"the {self.req['kind']} request on thread {thread!r} (instance '{self.instance_id}') got no result "
            f"within {self.timeout:g} s: {doing}. The request stays with the thread and may still run"
        )


def send_and_wait(
    instance_id: str,
    graph_name: str,
    req: dict[str, Any],
    waiting: Waiting,
    precheck: Any = None,
    timeout: float | None = None,
) -> Generator[Op, Any, dict[str, Any]]:
    """Deliver ``req`` to the thread (starting its orchestration if needed) and return its result.

    Whether the thread's graph and the client's agree is the orchestrator's to decide: it knows both, and refuses
    with :class:`GraphMismatchError` naming what changed. ``timeout`` bounds the whole wait
    (:class:`GraphTimeoutError`); a thread failed by a worker without its graph is started again meanwhile.
    """
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be None or at least 0 seconds, not {timeout!r}")
    epoch, after = yield from deliver(instance_id, graph_name, req, precheck, waiting.cursors)
    wait = _Wait(instance_id, graph_name, req, waiting, timeout, time.monotonic())
    if req.get("via") == STREAMED:
        return (yield from _follow(wait, epoch, after))
    return (yield from _poll(wait))


def _follow(wait: _Wait, epoch: str | None, after: str | None) -> Generator[Op, Any, dict[str, Any]]:
    """Wait for the request's result on the instance's stream, emitting its chunks as they arrive.

    A subscription ends when the instance does (a failed run, a worker without the graph); the instance is read
    then, and whenever the subscription's window (the request's ``timeout``, the thread's ``start_timeout``)
    has passed. Each new subscription goes on after the last item seen.
    """
    assembly = Assembly(wait.req["id"])
    cursor = after
    while True:
        yield Op("subscribe", wait.instance_id, {"after": cursor, "timeout": wait.window()})
        while (item := (yield Op("next"))) is not None:
            cursor = item.id
            if ready := assembly.feed(item.data, item.task_id, item.attempt):
                yield Op("emit", data=ready)
                wait.seen += len(ready)
            if assembly.result is not None:
                wait.waiting.cursors.note(wait.instance_id, epoch, cursor)
                return _accepted(assembly.result, wait.instance_id)
        state = yield Op("get", wait.instance_id)
        wait.running = wait.running or (state is not None and state.runtime_status != OrchestrationStatus.PENDING)
        if state is not None and state.runtime_status in _TERMINAL:
            yield from _ended_while_waiting(state, wait)
            continue
        if (error := wait.expired(state, _status(state) or {})) is not None:
            raise error
        if state is None:  # no instance to follow (purged meanwhile): look again after a pause
            yield Op("sleep", data=wait.waiting.poll_interval)


def _poll(wait: _Wait) -> Generator[Op, Any, dict[str, Any]]:
    """Wait for the request's result in the thread's custom status, where workers before durable streams put it."""
    instance_id, req, waiting = wait.instance_id, wait.req, wait.waiting
    while True:
        state = yield Op("get", instance_id)
        status = _status(state) or {}
        live = status.get("live")
        if live and live["id"] == req["id"] and len(chunks := load(live["chunks"])) > wait.seen:
            yield Op("emit", data=[tuple(c) for c in chunks[wait.seen :]])
            wait.seen = len(chunks)
        if state is not None and state.runtime_status in _TERMINAL:
            yield from _ended_while_waiting(state, wait)
            continue
        for rid, result in status.get("done", []):
            if rid == req["id"]:
                accepted = _accepted(result, instance_id)
                if "chunks" in accepted:
                    yield Op("emit", data=[tuple(c) for c in load(accepted["chunks"])][wait.seen :])
                return accepted
        if (error := wait.expired(state, status)) is not None:
            raise error
        yield Op("sleep", data=waiting.poll_interval)


def _ended_while_waiting(state: OrchestrationState, wait: _Wait) -> Generator[Op, Any, None]:
    """A thread that ended while its request waited: started again if a worker without its graph failed it."""
    restart = restart_input(state) if _not_registered(state) else None
    if restart is None:
        raise _ended(state, wait.graph_name)
    if wait.elapsed() > wait.waiting.start_timeout and (wait.timeout is None or wait.elapsed() > wait.timeout):
        raise GraphNotRegisteredError(
            f"workers without graph '{wait.graph_name}' took its thread (instance '{wait.instance_id}') and none "
            f"serving it picked it up within {max(wait.waiting.start_timeout, wait.timeout or 0):g} s: give every "
            "worker worker.use_work_item_filters(), or register the graph; the thread starts again on its next request"
        )
    if time.monotonic() - wait.restarted >= RESTART_EVERY:
        wait.restarted = time.monotonic()
        if not (yield Op("restart", wait.instance_id, start_input(wait.req, restart.get("carry")))):
            yield Op("raise_event", wait.instance_id, wait.req)
    yield Op("sleep", data=wait.waiting.poll_interval)


def _not_registered(state: OrchestrationState) -> bool:
    details = state.failure_details
    return details is not None and details.error_type.endswith("OrchestratorNotRegisteredError")


# Seconds a read of a failed thread's stream (for the checkpoints its failed run left there) may take.
FAILURE_READ_TIMEOUT = 60.0


def failed_carry(instance_id: str, state: OrchestrationState | None) -> Generator[Op, Any, dict[str, Any] | None]:
    """The checkpoints a thread whose last run failed left: in its status, or on its stream (the status says so)."""
    if (carry := failed_checkpoints(state)) is not None:
        return carry
    if state is None or state.runtime_status != OrchestrationStatus.FAILED:
        return None
    if not (_status(state) or {}).get("failed_on_stream"):
        return None
    # The instance has ended: the subscription ends once it has delivered every item.
    last = LastFailure()
    yield Op("subscribe", instance_id, {"after": None, "timeout": FAILURE_READ_TIMEOUT})
    while (item := (yield Op("next"))) is not None:
        last.feed(item.data)
    return last.carry


def restart_plan(instance_id: str, state: OrchestrationState | None) -> Generator[Op, Any, dict[str, Any] | None]:
    """:func:`restart_input`, with the checkpoints of a failed run read from the stream when they are there."""
    carry = yield from failed_carry(instance_id, state)
    return {"carry": carry} if carry is not None else restart_input(state)


def restart_input(state: OrchestrationState | None) -> dict[str, Any] | None:
    """What a failed thread starts again from (``{"carry": ...}``), or ``None`` if it cannot.

    After a failed run, its checkpoints as the custom status keeps them (see :func:`restart_plan` for those kept
    on the stream). After a worker without the graph failed the execution (it ran nothing), the execution's own
    input, when that input holds at most one run's worth of requests (the form in which each run ends its
    execution).
    """
    if (carry := failed_checkpoints(state)) is not None:
        return {"carry": carry}
    if state is None or state.runtime_status != OrchestrationStatus.FAILED or not _not_registered(state):
        return None
    try:
        payload = json.loads(state.serialized_input or "null")
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("v") != 2:
        return None
    return {"carry": payload.get("carry")}


def deliver(
    instance_id: str, graph_name: str, req: dict[str, Any], precheck: Any, cursors: Cursors
) -> Generator[Op, Any, tuple[str | None, str | None]]:
    """Check the thread's published state, then start its orchestration with ``req`` or raise it as an event.

    Returns the thread's stream epoch and where this client last read that stream (each ``None`` if unknown).
    """
    state: OrchestrationState | None = yield Op("get", instance_id)
    status = _status(state)
    epoch = (status or {}).get("epoch")
    after = cursors.start(instance_id, epoch)
    if ASK_FOR_STREAM and (status is None or status.get("via") == STREAMED):
        req["via"] = STREAMED  # else the thread's workers answer in the custom status
    restart = yield from restart_plan(instance_id, state)
    if state is not None and state.runtime_status in _TERMINAL and restart is None:
        raise _ended(state, graph_name)
    if precheck is not None:
        precheck(status)
    started = False
    if state is None:
        started = yield Op("start", instance_id, start_input(req))
    elif restart is not None:
        # After a failed run the thread goes on from its last checkpoints, as a LangGraph thread does.
        started = yield Op("restart", instance_id, start_input(req, restart["carry"]))
    if not started:
        yield Op("raise_event", instance_id, req)
    return epoch, after


#: Whether requests ask the thread's workers to answer on the thread's durable stream. Clients from before durable
#: streams did not ask, and their threads' workers answer them in the custom status (tests turn this off to act
#: as such a client). Every instance ID has a stream: long ones get shortened entity keys (docs/streams.md).
ASK_FOR_STREAM = True


def _accepted(result: dict[str, Any], instance_id: str) -> dict[str, Any]:
    refused = result.get("refused")
    if refused:
        known = _REFUSALS.get(refused["type"])
        if known is None:  # e.g. LangGraph's InvalidUpdateError for a bad update_state
            raise GraphRunError(refused["type"], refused["message"], instance_id)
        raise known(refused["message"])
    return result


def failed_checkpoints(state: OrchestrationState | None) -> dict[str, Any] | None:
    """The checkpoints a thread whose last run failed left in its status (``None`` if it did not fail)."""
    if state is None or state.runtime_status != OrchestrationStatus.FAILED:
        return None
    failed = (_status(state) or {}).get("failed")
    return failed if isinstance(failed, dict) else None


def resolve_instance(graph_name: str, thread_id: str) -> Generator[Op, Any, str]:
    """The thread's instance: :func:`instance_id`, or the one an earlier mapping gave it if the thread lives there.

    Only a short thread ID holding ``~`` mapped elsewhere before (to ``lg:{graph}:{thread_id}`` unhashed); such a
    thread is found there while its instance records this very thread ID, so no other thread's instance is taken.
    """
    current = instance_id(graph_name, thread_id)
    legacy = legacy_instance_id(graph_name, thread_id)
    if legacy is None:
        return current
    if (yield Op("get", current)) is not None:
        return current
    old: OrchestrationState | None = yield Op("get", legacy)
    return legacy if old is not None and recorded_thread_id(old) == thread_id else current


def recorded_thread_id(state: OrchestrationState) -> str | None:
    """The thread ID an instance's input records (its first request's, or the one it carried on)."""
    try:
        payload = json.loads(state.serialized_input or "null")
        if not isinstance(payload, dict):
            return None
        carry = payload.get("carry") or {}
        if carry.get("thread_id") is not None:
            return str(carry["thread_id"])
        body = load(payload["request"]["body"])
        return str(body["thread_id"])
    except (ValueError, KeyError, TypeError):  # not a thread's input: no thread of ours lives there
        return None


def read_state(instance_id: str) -> Generator[Op, Any, OrchestrationState | None]:
    state: OrchestrationState | None = yield Op("get", instance_id)
    return state


__all__ = [
    "RUN_EVENT",
    "Op",
    "Waiting",
    "check_resume_locally",
    "deliver",
    "failed_carry",
    "failed_checkpoints",
    "read_state",
    "recorded_thread_id",
    "request",
    "resolve_instance",
    "restart_input",
    "run_body",
    "send_and_wait",
    "start_input",
]
