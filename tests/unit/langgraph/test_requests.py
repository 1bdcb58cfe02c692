"""The client's plans without I/O: delivery, waiting, refusals, restarts and stream chunks, against fake states."""

from __future__ import annotations

import json
from datetime import datetime, timezone
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
from durabletask.extensions.langgraph._delivery import ATTEMPT_KEY, PIECE, TOPIC, pieces
from durabletask.extensions.langgraph._serde import dump
from durabletask.streams import StreamItem


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
    """Carry out ``plan``; ``answers['get']`` is a list of states handed out in turn (the last one repeats),
    ``answers['items']`` the stream items its subscriptions hand out, then ``None`` (ended or timed out)."""
    ops: list[rq.Op] = []
    emitted: list[Any] = []
    gets = list(answers["get"])
    items = list(answers.get("items", []))
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
        elif op.kind == "next":
            sent = items.pop(0) if items else None
        else:
            sent = answers.get(op.kind)


_REQ = {"id": "r1", "kind": "run", "fp": "fp1", "body": {}}
WAIT = rq.Waiting(start_timeout=0.0, poll_interval=0.0)


def req() -> dict[str, Any]:
    return dict(_REQ)


def item(data: Any, offset: int, task_id: int | None = None, attempt: int | None = None) -> StreamItem:
    return StreamItem(f"{offset:012d}-x", TOPIC, data, datetime.now(timezone.utc), task_id, attempt)


def items_of(request_id: str, kind: str, seq: int, message: dict[str, Any], first: int = 0, **producer: Any) -> list:
    return [item(v, first + i, **producer) for i, v in enumerate(pieces(request_id, kind, seq, message))]


def test_a_new_thread_is_started_and_its_result_found_on_its_stream() -> None:
    found = [*items_of("other", "result", 0, {}), *items_of("r1", "result", 0, {"output": 1}, first=1)]
    ops, result, _ = drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [None], "start": True, "items": found})
    assert [op.kind for op in ops] == ["get", "start", "subscribe", "next", "next"]
    assert result == {"output": 1}
    assert ops[2].data == {"after": None, "timeout": pytest.approx(0.05)}  # a look after start_timeout


def test_a_result_larger_than_one_item_is_put_together_from_its_pieces() -> None:
    big = {"output": "x" * (PIECE * 3 + 7)}
    found = items_of("r1", "result", 0, big)
    assert len(found) == 4 and all(len(json.dumps(i.data)) < 64 * 1024 for i in found)
    _, result, _ = drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [None], "start": True, "items": found})
    assert result == big


def test_a_subscription_that_ends_is_followed_after_its_last_item() -> None:
    running = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [], "via": "stream"})
    first = items_of("r1", "chunks", 1, {"c": dump([((), "updates", 1)], "c")})
    # The first subscription times out after one item (None); the plan looks at the instance, then goes on.
    rest = items_of("r1", "result", 0, {}, first=1)
    ops, result, emitted = drive(
        rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [running], "items": [*first, None, *rest]}
    )
    subscribed = [op.data["after"] for op in ops if op.kind == "subscribe"]
    assert subscribed == [None, first[-1].id] and result == {} and emitted == [((), "updates", 1)]


def test_a_tasks_chunks_wait_for_the_loops_chunks_before_them() -> None:
    task_chunk = items_of("r1", "chunk", 1, {"c": dump(((), "custom", "tok"), "c")}, task_id=3, attempt=1)
    loop = items_of("r1", "chunks", 1, {"c": dump([((), "tasks", "start")], "c")}, first=1)
    after = items_of("r1", "chunks", 2, {"c": dump([((), "updates", "end")], "c")}, first=2)
    found = [*task_chunk, *loop, *after, *items_of("r1", "result", 0, {}, first=3)]
    running = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [], "via": "stream"})
    _, _, emitted = drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [running], "items": found})
    assert emitted == [((), "tasks", "start"), ((), "custom", "tok"), ((), "updates", "end")]


def test_a_retried_attempts_message_chunks_name_the_attempt() -> None:
    message = ((), "messages", ("token", {"langgraph_node": "n"}))
    found = [
        *items_of("r1", "chunk", 0, {"c": dump(message, "c")}, task_id=3, attempt=1),
        *items_of("r1", "chunk", 0, {"c": dump(message, "c")}, first=1, task_id=3, attempt=2),
        *items_of("r1", "result", 0, {}, first=2),
    ]
    running = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [], "via": "stream"})
    _, _, emitted = drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [running], "items": found})
    assert [tuple(meta.items()) for _, _, (_, meta) in emitted] == [
        (("langgraph_node", "n"),),
        (("langgraph_node", "n"), (ATTEMPT_KEY, 2)),
    ]


def test_a_thread_answering_in_its_status_is_asked_the_old_way() -> None:
    # Workers from before durable streams wrote a status without "via": the result is looked for there.
    old = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": []})
    answered = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [["r1", {"output": 5}]]})
    sent = req()
    ops, result, _ = drive(rq.send_and_wait("lg:g:t", "g", sent, WAIT), {"get": [old, answered]})
    assert [op.kind for op in ops] == ["get", "raise_event", "get"] and result == {"output": 5}
    assert "via" not in sent


def test_a_thread_nobody_picks_up_is_a_clear_error() -> None:
    plan = rq.send_and_wait("lg:g:t", "g", req(), WAIT)
    with pytest.raises(GraphNotRegisteredError, match="no worker picked up graph 'g'"):
        drive(plan, {"get": [None, state(OrchestrationStatus.PENDING)], "start": True})


def test_a_running_thread_gets_an_event_and_refusals_raise() -> None:
    running = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": []})
    refused = state(
        OrchestrationStatus.RUNNING,
        {"fp": "fp1", "done": [["r1", {"refused": {"type": "ResumeRejectedError", "message": "nothing waits"}}]]},
    )
    with pytest.raises(ResumeRejectedError, match="nothing waits"):
        drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [running, refused]})
    other = state(
        OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [["r1", {"refused": {"type": "x.Bad", "message": "m"}}]]}
    )
    with pytest.raises(GraphRunError) as caught:
        drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [running, other]})
    assert (caught.value.error_type, caught.value.error_message) == ("x.Bad", "m")


def test_a_different_graph_is_sent_for_the_thread_to_judge() -> None:
    # The orchestrator knows the thread's graph and the workers': it refuses, or carries the thread on.
    running = state(OrchestrationStatus.RUNNING, {"fp": "other", "done": []})
    refused = state(
        OrchestrationStatus.RUNNING,
        {"fp": "other", "done": [["r1", {"refused": {"type": "GraphMismatchError", "message": "node 'b' removed"}}]]},
    )
    with pytest.raises(GraphMismatchError, match="node 'b' removed"):
        drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [running, refused]})


def test_a_failed_thread_restarts_from_its_checkpoints() -> None:
    failed = state(OrchestrationStatus.FAILED, {"fp": "fp1", "done": [], "failed": {"saver": {"t": "x", "b": ""}}})
    done = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [["r1", {"output": 2}]]})
    ops, result, _ = drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [failed, done], "restart": True})
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
    _, _, emitted = drive(rq.send_and_wait("lg:g:t", "g", req(), WAIT), {"get": [running, one, one, two, final]})
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


def test_a_later_request_reads_the_stream_after_where_this_client_left_it_in_the_same_epoch() -> None:
    waiting = rq.Waiting(start_timeout=0.0, poll_interval=0.0)
    running = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [], "via": "stream", "epoch": "e1"})
    first = items_of("r1", "result", 0, {"output": 1}, first=7)
    drive(rq.send_and_wait("lg:g:t", "g", req(), waiting), {"get": [running], "items": first})
    second = {**req(), "id": "r2"}
    ops, result, _ = drive(
        rq.send_and_wait("lg:g:t", "g", second, waiting),
        {"get": [running], "items": items_of("r2", "result", 0, {"output": 2}, first=8)},
    )
    assert [op.data["after"] for op in ops if op.kind == "subscribe"] == [first[-1].id] and result == {"output": 2}
    # A recreated instance has a stream of its own (another epoch): it is read from its start.
    recreated = state(OrchestrationStatus.RUNNING, {"fp": "fp1", "done": [], "via": "stream", "epoch": "e2"})
    ops, _, _ = drive(
        rq.send_and_wait("lg:g:t", "g", {**req(), "id": "r3"}, waiting),
        {"get": [recreated], "items": items_of("r3", "result", 0, {}, first=0)},
    )
    assert [op.data["after"] for op in ops if op.kind == "subscribe"] == [None]


def test_a_failed_thread_restarts_from_the_checkpoints_its_run_left_on_the_stream() -> None:
    carry = {"saver": {"t": "x", "b": "z" * (PIECE * 2)}, "epoch": "e1"}
    failed = state(OrchestrationStatus.FAILED, {"fp": "fp1", "done": [], "via": "stream", "failed_on_stream": True})
    left = [
        *items_of("old", "failed", 0, {"saver": {"t": "x", "b": "older"}}),
        *items_of("r0", "result", 0, {}, first=1),
        *items_of("r0", "failed", 0, carry, first=2),
    ]
    ops, _, _ = drive(
        rq.send_and_wait("lg:g:t", "g", req(), WAIT),
        {"get": [failed], "restart": True, "items": [*left, None, *items_of("r1", "result", 0, {}, first=5)]},
    )
    restart = next(op for op in ops if op.kind == "restart")
    assert restart.data["carry"] == carry  # the last failure's, put together from its pieces
    assert [op.kind for op in ops][:3] == ["get", "subscribe", "next"]
