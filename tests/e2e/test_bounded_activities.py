"""Bounded activity calls end to end: timeouts, heartbeats and cancellation between a real worker and the backend."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task

from .conftest import Hub, unique_id

WAIT = 60
# What each running attempt saw, by instance ID: set by the activities below, read by the tests.
_seen: dict[str, list[Any]] = {}
_stopped: dict[str, threading.Event] = {}


def _stopped_event(instance_id: str) -> threading.Event:
    return _stopped.setdefault(instance_id, threading.Event())


def _note(ctx: task.ActivityContext, what: Any) -> None:
    _seen.setdefault(ctx.orchestration_id, []).append(what)


def _loop_until_stopped(ctx: task.ActivityContext, start: int, stall_after: int | None = None) -> int:
    """Heartbeat a page counter until asked to stop (or, with ``stall_after``, go silent after that page)."""
    page = start
    deadline = time.monotonic() + WAIT
    try:
        while time.monotonic() < deadline:
            if stall_after is None or page <= stall_after:
                ctx.heartbeat(page)
            elif ctx.is_cancellation_requested:
                raise task.ActivityCancelledError("noticed by polling")
            page += 1
            time.sleep(0.05)
    except task.ActivityCancelledError:
        _note(ctx, ("stopped", page))
        _stopped_event(ctx.orchestration_id).set()
        raise
    return page


def extract(ctx: task.ActivityContext, plan: dict[str, Any]) -> Any:
    resumed = ctx.heartbeat_details
    _note(ctx, ("attempt", ctx.task_id, resumed))
    if resumed is not None:
        return {"resumed_from": resumed}
    return _loop_until_stopped(ctx, 0, plan.get("stall_after"))


def timed_pipeline(ctx: task.OrchestrationContext, plan: dict[str, Any]) -> Any:
    retry = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=100), max_number_of_attempts=2)
    options: dict[str, Any] = {key: timedelta(seconds=value) for key, value in plan["timeouts"].items()}
    try:
        return (yield ctx.call_activity(extract, input=plan, retry_policy=retry if plan.get("retry") else None,
                                        **options))
    except task.ActivityTimeoutError as error:
        return {"timeout": error.timeout_type, "details": error.last_heartbeat_details}


def cancellable_pipeline(ctx: task.OrchestrationContext, how: str) -> Any:
    t = ctx.call_activity(extract, input={}, heartbeat_timeout=timedelta(seconds=10),
                          cancellation=task.ActivityCancellation[how])
    winner = yield task.when_any([t, ctx.wait_for_external_event("cancel")])
    if winner is not t:
        t.cancel()
    try:
        return (yield t)
    except task.TaskCancelledError:
        return "cancelled"


def _run(hub: Hub, orchestrator: Any, payload: Any) -> tuple[client.TaskHubGrpcClient, str]:
    hub.start_worker([orchestrator], [extract])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(orchestrator, input=payload, instance_id=unique_id("bounded"))
    return c, instance_id


def _output(c: client.TaskHubGrpcClient, instance_id: str) -> Any:
    state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    assert state is not None
    assert state.runtime_status == client.OrchestrationStatus.COMPLETED, state.failure_details
    return json.loads(state.serialized_output) if state.serialized_output else None


def test_a_timed_out_attempt_is_stopped_and_the_retry_resumes_from_its_last_heartbeat(hub: Hub) -> None:
    c, instance_id = _run(hub, timed_pipeline, {"timeouts": {"start_to_close_timeout": 2}, "retry": True})
    result = _output(c, instance_id)
    assert isinstance(result["resumed_from"], int) and result["resumed_from"] > 0
    assert _stopped_event(instance_id).wait(WAIT)  # the first attempt saw the stop at a heartbeat
    attempts = [entry for entry in _seen[instance_id] if entry[0] == "attempt"]
    assert [a[2] for a in attempts] == [None, result["resumed_from"]]
    assert attempts[0][1] != attempts[1][1]  # each attempt is its own task


def test_a_silent_attempt_fails_with_a_heartbeat_timeout_and_its_last_details(hub: Hub) -> None:
    c, instance_id = _run(hub, timed_pipeline, {"timeouts": {"heartbeat_timeout": 1}, "stall_after": 3})
    assert _output(c, instance_id) == {"timeout": "heartbeat", "details": 3}
    assert _stopped_event(instance_id).wait(WAIT)  # polling is_cancellation_requested saw the stop too


@pytest.mark.parametrize("how", ["TRY_CANCEL", "WAIT_CANCELLATION_COMPLETED"])
def test_a_cancelled_call_stops_the_running_activity(hub: Hub, how: str) -> None:
    c, instance_id = _run(hub, cancellable_pipeline, how)
    c.wait_for_orchestration_start(instance_id, timeout=WAIT)
    _wait_for_heartbeats(instance_id)
    c.raise_orchestration_event(instance_id, "cancel")
    assert _output(c, instance_id) == "cancelled"
    assert _stopped_event(instance_id).wait(WAIT)


def test_abandon_does_not_tell_the_activity(hub: Hub) -> None:
    c, instance_id = _run(hub, cancellable_pipeline, "ABANDON")
    _wait_for_heartbeats(instance_id)
    c.raise_orchestration_event(instance_id, "cancel")
    assert _output(c, instance_id) == "cancelled"
    # The orchestration has completed, so the activity learns of it at a heartbeat all the same: an ended
    # orchestration stops its activities whatever the cancellation type.
    assert _stopped_event(instance_id).wait(WAIT)


def test_terminate_stops_the_running_activity(hub: Hub) -> None:
    c, instance_id = _run(hub, cancellable_pipeline, "TRY_CANCEL")
    _wait_for_heartbeats(instance_id)
    c.terminate_orchestration(instance_id, output="enough")
    c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    assert _stopped_event(instance_id).wait(WAIT)


def _wait_for_heartbeats(instance_id: str) -> None:
    deadline = time.monotonic() + WAIT
    while not any(entry[0] == "attempt" for entry in _seen.get(instance_id, [])):
        assert time.monotonic() < deadline, "the activity never started"
        time.sleep(0.05)
