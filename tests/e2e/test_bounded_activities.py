"""Bounded activity calls end to end: timeouts, heartbeats and cancellation between a real worker and the backend."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import grpc
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
    assert isinstance(result["resumed_from"], int)  # the first attempt's heartbeat reached the retry (not None)
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


async def extract_async(ctx: task.ActivityContext, _: Any) -> int:
    import asyncio

    page = 0
    _note(ctx, ("attempt", ctx.task_id, None))
    try:
        while page < 100_000:
            ctx.heartbeat(page)  # the same call as in a thread: it never waits for the network
            page += 1
            await asyncio.sleep(0.02)
    except task.ActivityCancelledError:
        _note(ctx, ("stopped", page))
        _stopped_event(ctx.orchestration_id).set()
        raise
    return page


def async_pipeline(ctx: task.OrchestrationContext, _: Any) -> Any:
    t = ctx.call_activity(extract_async, heartbeat_timeout=timedelta(seconds=5))
    yield ctx.wait_for_external_event("cancel")
    t.cancel()
    return "cancelled"


def test_an_async_activity_heartbeats_and_is_stopped_the_same_way(hub: Hub) -> None:
    hub.start_worker([async_pipeline], [extract_async])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(async_pipeline, instance_id=unique_id("async"))
    _wait_for_heartbeats(instance_id)
    c.raise_orchestration_event(instance_id, "cancel")
    assert _output(c, instance_id) == "cancelled"
    assert _stopped_event(instance_id).wait(WAIT)


def renewing(ctx: task.OrchestrationContext, generation: int) -> Any:
    if generation == 0:
        ctx.call_activity(extract, input={}, heartbeat_timeout=timedelta(seconds=10))
        yield ctx.wait_for_external_event("renew")
        ctx.continue_as_new(1)
        return None
    return "renewed"


def test_continue_as_new_stops_the_activities_of_the_execution_it_ends(hub: Hub) -> None:
    c, instance_id = _run(hub, renewing, 0)
    _wait_for_heartbeats(instance_id)
    c.raise_orchestration_event(instance_id, "renew")
    assert _output(c, instance_id) == "renewed"
    assert _stopped_event(instance_id).wait(WAIT)


def chatty(ctx: task.ActivityContext, count: int) -> int:
    for page in range(count):
        ctx.heartbeat(page)
    return count


def chatty_pipeline(ctx: task.OrchestrationContext, count: int) -> Any:
    return (yield ctx.call_activity(chatty, input=count, heartbeat_timeout=timedelta(minutes=5)))


def test_a_loop_of_heartbeats_costs_what_one_heartbeat_costs(hub: Hub) -> None:
    hub.start_worker([chatty_pipeline], [chatty])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(chatty_pipeline, input=200_000, instance_id=unique_id("chatty"))
    assert _output(c, instance_id) == 200_000
    reports = [
        json.loads(e.eventRaised.input.value)["kind"]
        for e in _history(hub, instance_id)
        if e.HasField("eventRaised") and e.eventRaised.name == "dtscale.activity"
    ]
    # Its start, and at most the first heartbeat (sent at once); the next could go only after 0.8 x 5 minutes,
    # and the activity's end drops the unsent details (its result supersedes them).
    assert reports[0] == "start" and reports.count("beat") <= 1 and len(reports) <= 2


def _history(hub: Hub, instance_id: str) -> list[Any]:
    from tests.support.reliability import fetch_history

    return list(fetch_history(hub.address, instance_id, hub.taskhub)) if hub.backend is None else hub.backend.history(
        hub.taskhub, instance_id)


def test_durabletask_get_shows_each_running_activitys_timeouts_and_last_heartbeat(hub: Hub) -> None:
    import os
    import subprocess
    import sys

    c, instance_id = _run(hub, cancellable_pipeline, "TRY_CANCEL")
    _wait_for_heartbeats(instance_id)
    deadline = time.monotonic() + WAIT
    out = ""
    env = hub.child_env({k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")})
    while time.monotonic() < deadline:  # until a heartbeat with details has reached the orchestration
        proc = subprocess.run([sys.executable, "-m", "durabletask.cli", *hub.cli_args(), "get", instance_id],
                              capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        if "RUNNING ACTIVITY" in out and out.rstrip().splitlines()[-1].split()[-1].isdigit():
            break
        time.sleep(0.2)
    header, row = out.rstrip().splitlines()[-2:]
    assert header.split()[:4] == ["RUNNING", "ACTIVITY", "ATTEMPT", "TIMEOUTS"]
    assert row.split()[:5] == ["extract", "#1", "1", "heartbeat", "10s"]
    c.raise_orchestration_event(instance_id, "cancel")
    assert _output(c, instance_id) == "cancelled"


def test_replay_check_accepts_the_histories_of_bounded_calls(hub: Hub) -> None:
    from durabletask import worker
    from durabletask.testing import ReplayChecker, Verdict, histories_from_client

    hub.start_worker([timed_pipeline, cancellable_pipeline], [extract])
    c = hub.client()
    timed = c.schedule_new_orchestration(timed_pipeline, input={"timeouts": {"start_to_close_timeout": 1},
                                                                "retry": True}, instance_id=unique_id("rc-timed"))
    cancelled = c.schedule_new_orchestration(cancellable_pipeline, input="TRY_CANCEL", instance_id=unique_id("rc"))
    _wait_for_heartbeats(cancelled)
    c.raise_orchestration_event(cancelled, "cancel")
    for instance_id in (timed, cancelled):
        _output(c, instance_id)
    checker = worker.TaskHubGrpcWorker()
    checker.add_orchestrator(timed_pipeline)
    checker.add_orchestrator(cancellable_pipeline)
    report = ReplayChecker(checker).check(histories_from_client(c, statuses=[client.OrchestrationStatus.COMPLETED]))
    verdicts = {r.instance_id: r.verdict for r in report.results if r.instance_id in (timed, cancelled)}
    assert verdicts == {timed: Verdict.REPLAYS, cancelled: Verdict.REPLAYS}


class _Counting(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Counts the worker's unary calls by method."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        with self._lock:
            method = details.method.rsplit("/", 1)[-1]
            self.calls[method] = self.calls.get(method, 0) + 1
        return continuation(details, request)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.calls)


def many_pipeline(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_activity(extract_async, heartbeat_timeout=timedelta(seconds=10)))


def test_whether_attempts_must_stop_is_checked_for_all_of_them_at_once(hub: Hub) -> None:
    from durabletask._worker.attempt_checks import FALLBACK_PER_LOOK

    counting = _Counting()
    hub.start_worker([many_pipeline], [extract_async], interceptors=[counting])
    c = hub.client()
    ids = [c.schedule_new_orchestration(many_pipeline, instance_id=unique_id("many")) for _ in range(30)]
    for instance_id in ids:
        _wait_for_heartbeats(instance_id)
    before = counting.snapshot()
    deadline = time.monotonic() + WAIT
    while counting.snapshot().get("QueryEntities", 0) < before.get("QueryEntities", 0) + 4:
        assert time.monotonic() < deadline, "the worker stopped checking"
        time.sleep(0.05)
    after = counting.snapshot()
    grew = {m: after.get(m, 0) - before.get(m, 0) for m in ("QueryEntities", "ListInstanceIds", "GetEntity")}
    # Per look: one QueryEntities and one ListInstanceIds page for all 30 attempts, and the slow per-attempt
    # check (GetEntity, GetInstance) for a few at most, where a check per attempt would read 30 entities.
    looks = grew["QueryEntities"] + 1  # a look may have been under way when counting began
    assert grew["ListInstanceIds"] <= looks
    assert grew["GetEntity"] <= FALLBACK_PER_LOOK * looks < 30 * (looks - 1)
    for instance_id in ids:  # a termination reaches every attempt through the listing of terminated instances
        c.terminate_orchestration(instance_id)
    for instance_id in ids:
        assert _stopped_event(instance_id).wait(WAIT)
