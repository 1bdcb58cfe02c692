"""The client's side of a thread, without I/O: requests to send, and the plan that sends one and waits for it.

A plan is a generator of :class:`Op` s (read the instance, start it, raise the event, sleep); the sync and
async façades in ``_client`` only carry them out, so both share every rule here.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from durabletask._instance_models import OrchestrationState, OrchestrationStatus
from durabletask.extensions.langgraph._errors import (
    GraphMismatchError,
    GraphNotRegisteredError,
    GraphRunError,
    LangGraphError,
    ResumeRejectedError,
)
from durabletask.extensions.langgraph._naming import (
    RUN_EVENT,
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
    ``sleep``, or ``emit`` stream chunks."""

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


@dataclass(frozen=True)
class Waiting:
    """How long and how often a plan polls."""

    start_timeout: float
    poll_interval: float


def send_and_wait(
    instance_id: str, graph_name: str, req: dict[str, Any], waiting: Waiting, precheck: Any = None
) -> Generator[Op, Any, dict[str, Any]]:
    """Deliver ``req`` to the thread (starting its orchestration if needed) and return its result.

    Whether the thread's graph and the client's agree is the orchestrator's to decide: it knows both, and refuses
    with :class:`GraphMismatchError` naming what changed.
    """
    yield from _deliver(instance_id, graph_name, req, precheck)
    since = time.monotonic()
    seen = 0  # stream chunks already handed out
    while True:
        state = yield Op("get", instance_id)
        status = _status(state) or {}
        live = status.get("live")
        if live and live["id"] == req["id"] and len(chunks := load(live["chunks"])) > seen:
            yield Op("emit", data=[tuple(c) for c in chunks[seen:]])
            seen = len(chunks)
        if state is not None and state.runtime_status in _TERMINAL:
            raise _ended(state, graph_name)
        for rid, result in status.get("done", []):
            if rid == req["id"]:
                accepted = _accepted(result, instance_id)
                if "chunks" in accepted:
                    yield Op("emit", data=[tuple(c) for c in load(accepted["chunks"])][seen:])
                return accepted
        pending = state is None or state.runtime_status == OrchestrationStatus.PENDING
        if pending and time.monotonic() - since > waiting.start_timeout:
            raise GraphNotRegisteredError(
                f"no worker picked up graph '{graph_name}' (orchestrator '{orchestrator_name(graph_name)}') "
                f"within {waiting.start_timeout:g} s: is the graph registered with register_graph on a running worker?"
            )
        yield Op("sleep", data=waiting.poll_interval)


def _deliver(instance_id: str, graph_name: str, req: dict[str, Any], precheck: Any) -> Generator[Op, Any, None]:
    """Check the thread's published state, then start its orchestration with ``req`` or raise it as an event."""
    state: OrchestrationState | None = yield Op("get", instance_id)
    status = _status(state)
    carry = failed_checkpoints(state)
    if state is not None and state.runtime_status in _TERMINAL and carry is None:
        raise _ended(state, graph_name)
    if precheck is not None:
        precheck(status)
    started = False
    if state is None:
        started = yield Op("start", instance_id, start_input(req))
    elif carry is not None:
        # After a failed run the thread goes on from its last checkpoints, as a LangGraph thread does.
        started = yield Op("restart", instance_id, start_input(req, carry))
    if not started:
        yield Op("raise_event", instance_id, req)


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
    "failed_checkpoints",
    "read_state",
    "recorded_thread_id",
    "request",
    "resolve_instance",
    "run_body",
    "send_and_wait",
    "start_input",
]
