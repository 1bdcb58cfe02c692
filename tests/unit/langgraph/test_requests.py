"""The client's plans without I/O: delivery, waiting, refusals, restarts and stream chunks, against fake states."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.types import Command

from durabletask._instance_models import OrchestrationState, OrchestrationStatus
from durabletask.extensions.langgraph import (
    GraphMismatchError,
    GraphNotRegisteredError,
    GraphRunError,
    ResumeRejectedError,
)
from durabletask.extensions.langgraph import _requests as rq
from durabletask.extensions.langgraph._serde import dump


def state(status: OrchestrationStatus, custom: Any = None) -> OrchestrationState:
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    return OrchestrationState(
        instance_id="lg:g:t",
        name="lg:g",
        runtime_status=status,
        created_at=now,
        last_updated_at=now,
        serialized_input=None,
        serialized_output=None,
        serialized_custom_status=None if custom is None else json.dumps(custom),
        failure_details=None,
    )


def drive(plan: Any, answers: dict[str, Any]) -> tuple[list[rq.Op], Any, list[Any]]:
    """Carry out ``plan``; ``answers['get']`` is a list of states handed out in turn (the last one repeats)."""
    ops: list[rq.Op] = []
    emitted: list[Any] = []
    gets = list(answers["get"])
    sent: Any = None
    while True:
        try:
            op = plan.send(sent)
        except StopIteration as stop:
            return ops, stop.value, emitted
        ops.append(op)
        if op.kind == "get":
            sent = gets.pop(0) if len(gets) > 1 else gets[0]
        elif op.kind == "emit":
            emitted.extend(op.data)
            sent = None
        else:
            sent = answers.get(op.kind)


REQ = {"id": "r1", "kind": "run", "fp": "fp1", "body": {}}
WAIT = rq.Waiting(start_timeout=0.0, poll_interval=0.0)


def test_a_new_thread_is_started_and_its_result_found() -> None:
    done = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [["other", {}], ["r1", {"output": 1}]]})
    ops, result, _ = drive(rq.send_and_wait("lg:g:t", "g", REQ, WAIT), {"get": [None, done], "start": True})
    assert [op.kind for op in ops] == ["get", "start", "get"]
    assert result == {"output": 1}


def test_a_thread_nobody_picks_up_is_a_clear_error() -> None:
    plan = rq.send_and_wait("lg:g:t", "g", REQ, WAIT)
    with pytest.raises(GraphNotRegisteredError, match="no worker picked up graph 'g'"):
        drive(plan, {"get": [None, state(OrchestrationStatus.PENDING)], "start": True})


def test_a_running_thread_gets_an_event_and_refusals_raise() -> None:
    running = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": []})
    refused = state(
        OrchestrationStatus.RUNNING,
        {"fp": "fp1", "done": [["r1", {"refused": {"type": "ResumeRejectedError", "message": "nothing waits"}}]]},
    )
    with pytest.raises(ResumeRejectedError, match="nothing waits"):
        drive(rq.send_and_wait("lg:g:t", "g", REQ, WAIT), {"get": [running, refused]})
    other = state(
        OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [["r1", {"refused": {"type": "x.Bad", "message": "m"}}]]}
    )
    with pytest.raises(GraphRunError) as caught:
        drive(rq.send_and_wait("lg:g:t", "g", REQ, WAIT), {"get": [running, other]})
    assert (caught.value.error_type, caught.value.error_message) == ("x.Bad", "m")


def test_a_different_graph_is_sent_for_the_thread_to_judge() -> None:
    # The orchestrator knows the thread's graph and the workers': it refuses, or carries the thread on.
    running = state(OrchestrationStatus.RUNNING, {"fp": "other", "done": []})
    refused = state(
        OrchestrationStatus.RUNNING,
        {"fp": "other", "done": [["r1", {"refused": {"type": "GraphMismatchError", "message": "node 'b' removed"}}]]},
    )
    with pytest.raises(GraphMismatchError, match="node 'b' removed"):
        drive(rq.send_and_wait("lg:g:t", "g", REQ, WAIT), {"get": [running, refused]})


def test_a_failed_thread_restarts_from_its_checkpoints() -> None:
    failed = state(OrchestrationStatus.FAILED, {"fp": "fp1", "done": [], "failed": {"saver": {"t": "x", "b": ""}}})
    done = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [["r1", {"output": 2}]]})
    ops, result, _ = drive(rq.send_and_wait("lg:g:t", "g", REQ, WAIT), {"get": [failed, done], "restart": True})
    assert [op.kind for op in ops] == ["get", "restart", "get"] and result == {"output": 2}
    assert ops[1].data["carry"] == {"saver": {"t": "x", "b": ""}}


def test_stream_chunks_are_emitted_once_each() -> None:
    one = state(
        OrchestrationStatus.RUNNING,
        {"fp": "fp1", "done": [], "live": {"id": "r1", "chunks": dump([["updates", 1]], "c")}},
    )
    two = state(
        OrchestrationStatus.RUNNING,
        {"fp": "fp1", "done": [], "live": {"id": "r1", "chunks": dump([["updates", 1], ["updates", 2]], "c")}},
    )
    final = state(
        OrchestrationStatus.RUNNING,
        {"fp": "fp1", "done": [["r1", {"chunks": dump([["updates", 1], ["updates", 2], ["values", 3]], "c")}]]},
    )
    running = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": []})
    _, _, emitted = drive(rq.send_and_wait("lg:g:t", "g", REQ, WAIT), {"get": [running, one, one, two, final]})
    assert emitted == [("updates", 1), ("updates", 2), ("values", 3)]


def test_resumes_are_checked_against_the_published_interrupts() -> None:
    waiting = {"interrupts": ["a" * 32]}
    rq.check_resume_locally(Command(resume={"a" * 32: 1}), None, waiting, "t")
    rq.check_resume_locally(Command(resume="plain"), None, waiting, "t")
    rq.check_resume_locally({"not": "a command"}, None, None, "t")
    with pytest.raises(ResumeRejectedError, match="b" * 32):
        rq.check_resume_locally(Command(resume={"b" * 32: 1}), None, waiting, "t")
    with pytest.raises(ResumeRejectedError, match="no pending interrupt"):
        rq.check_resume_locally(Command(resume=1), None, {"interrupts": []}, "t")
