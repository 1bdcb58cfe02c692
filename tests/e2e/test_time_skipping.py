"""Time skipping, end to end with our SDK: while nothing is leased or ready, the backend's clock jumps to the next
due timer, so a month of timers and backoffs passes at once; while work runs, it never jumps."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from dtscale_emulator.ops.clock import ManualClock
from durabletask import client, task, worker
from durabletask.testing import InMemoryOrchestrationBackend, create_test_backend

pytestmark = pytest.mark.local_only("the test backend's own clock is what is under test")

WAIT = 60


@pytest.fixture(scope="module")
def backend() -> Iterator[InMemoryOrchestrationBackend]:
    made = create_test_backend(port=0, time_skipping=True)
    yield made
    made.stop()


@pytest.fixture
def hub(
    backend: InMemoryOrchestrationBackend,
) -> Iterator[tuple[client.TaskHubGrpcClient, list[worker.TaskHubGrpcWorker]]]:
    c = client.TaskHubGrpcClient(host_address=backend.address)
    workers: list[worker.TaskHubGrpcWorker] = []
    yield c, workers
    for w in workers:
        w.stop()
    c.close()


def run_worker(address: str, workers: list[worker.TaskHubGrpcWorker], *functions: Any, activities: Any = ()) -> None:
    w = worker.TaskHubGrpcWorker(host_address=address)
    for fn in functions:
        w.add_orchestrator(fn)
    for fn in activities:
        w.add_activity(fn)
    w.start()
    workers.append(w)


_attempts: dict[str, int] = {}


def charge(ctx: task.ActivityContext, key: str) -> str:
    _attempts[key] = _attempts.get(key, 0) + 1
    if _attempts[key] < 3:
        raise RuntimeError(f"card declined (attempt {_attempts[key]})")
    return f"charged after {_attempts[key]} attempts"


def monthly_invoice(ctx: task.OrchestrationContext, key: str) -> Any:
    started = ctx.current_utc_datetime
    yield ctx.create_timer(timedelta(days=30))
    after_month = ctx.current_utc_datetime
    policy = task.RetryPolicy(first_retry_interval=timedelta(hours=1), max_number_of_attempts=5, backoff_coefficient=2)
    result = yield ctx.call_activity(charge, input=key, retry_policy=policy)
    return {"result": result, "times": [t.isoformat() for t in (started, after_month, ctx.current_utc_datetime)]}


def test_a_thirty_day_timer_and_hourly_backoffs_pass_on_the_orchestration_clock(
    backend: InMemoryOrchestrationBackend, hub: Any
) -> None:
    c, workers = hub
    run_worker(backend.address, workers, monthly_invoice, activities=[charge])
    key = uuid.uuid4().hex
    iid = c.schedule_new_orchestration(monthly_invoice, input=key)
    state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    output = json.loads(state.serialized_output or "null")
    assert output["result"] == "charged after 3 attempts"
    started, after_month, done = (datetime.fromisoformat(t) for t in output["times"])
    # The clock stands still between jumps, so the orchestration sees exactly the timer and the backoffs: 1 h + 2 h.
    assert after_month - started == timedelta(days=30)
    assert done - after_month == timedelta(hours=3)


_gate = {"running": threading.Event(), "release": threading.Event()}


def slow_work(ctx: task.ActivityContext, _: Any) -> str:
    _gate["running"].set()
    assert _gate["release"].wait(WAIT), "the test never let the activity finish"
    return "activity"


def race(ctx: task.OrchestrationContext, _: Any) -> Any:
    work = ctx.call_activity(slow_work)
    deadline = ctx.create_timer(timedelta(minutes=10))
    winner = yield task.when_any([work, deadline])
    return "activity" if winner is work else "timer"


def test_the_clock_never_jumps_while_an_activity_runs(backend: InMemoryOrchestrationBackend, hub: Any) -> None:
    c, workers = hub
    run_worker(backend.address, workers, race, activities=[slow_work])
    _gate["running"].clear()
    _gate["release"].clear()
    before = backend.now()
    iid = c.schedule_new_orchestration(race)
    assert _gate["running"].wait(WAIT)
    # The activity is out with the worker (as if it took as long as it likes): the 10-minute timer stays ahead.
    assert backend.now() == before
    _gate["release"].set()
    state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
    assert state is not None and state.serialized_output == '"activity"'
    assert backend.now() == before  # the lost timer went with the finished instance: nothing to jump to


def approval(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.set_custom_status("waiting")
    try:
        approver = yield ctx.wait_for_external_event("approve", timeout=timedelta(days=3))
    except task.EventTimeoutError:
        return "escalated"
    return {"approved_by": approver}


def test_a_timeout_passes_at_once_and_a_pause_lets_the_event_win(
    backend: InMemoryOrchestrationBackend, hub: Any
) -> None:
    c, workers = hub
    run_worker(backend.address, workers, approval)
    before = backend.now()
    timed_out = c.schedule_new_orchestration(approval)
    state = c.wait_for_orchestration_completion(timed_out, timeout=WAIT)
    assert state is not None and state.serialized_output == '"escalated"'
    assert backend.now() - before == timedelta(days=3)

    with backend.time_skipping_paused():
        approved = c.schedule_new_orchestration(approval)
        deadline = datetime.now() + timedelta(seconds=WAIT)
        while c.get_orchestration_state(approved).serialized_custom_status != '"waiting"':  # type: ignore[union-attr]
            assert datetime.now() < deadline, "the orchestration never started waiting"
            time.sleep(0.02)
        c.raise_orchestration_event(approved, "approve", data="alice")
        state = c.wait_for_orchestration_completion(approved, timeout=WAIT)
    assert state is not None and state.serialized_output == '{"approved_by": "alice"}'


def two_hours(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.create_timer(timedelta(hours=2))
    return "done"


def test_time_moves_explicitly_on_a_backend_with_a_manual_clock() -> None:
    backend = InMemoryOrchestrationBackend(port=0, clock=ManualClock())
    backend.start()
    c = client.TaskHubGrpcClient(host_address=backend.address)
    workers: list[worker.TaskHubGrpcWorker] = []
    try:
        run_worker(backend.address, workers, two_hours)
        iid = c.schedule_new_orchestration(two_hours)
        assert c.wait_for_orchestration_start(iid, timeout=WAIT) is not None
        backend.advance_time(timedelta(hours=1))
        with pytest.raises(TimeoutError):
            c.wait_for_orchestration_completion(iid, timeout=1)  # an hour short: no timer is due
        backend.advance_time(timedelta(hours=1))
        state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
        assert state is not None and state.serialized_output == '"done"'
        assert not backend.time_skipping
    finally:
        for w in workers:
            w.stop()
        c.close()
        backend.stop()


def test_advancing_a_real_clock_is_refused() -> None:
    backend = InMemoryOrchestrationBackend(port=0)
    with pytest.raises(RuntimeError, match="time_skipping=True or clock=ManualClock"):
        backend.advance_time(timedelta(hours=1))


def test_the_emulator_command_skips_time_with_its_flag() -> None:
    command = [sys.executable, "-m", "dtscale_emulator", "--port", "0", "--in-memory", "--no-dashboard"]
    with subprocess.Popen([*command, "--time-skipping"], stdout=subprocess.PIPE, text=True) as proc:
        _month_on_the_emulator_process(proc)


def _month_on_the_emulator_process(proc: subprocess.Popen[str]) -> None:
    try:
        assert proc.stdout is not None
        listening = proc.stdout.readline().strip()
        assert listening.startswith("Durable Task emulator listening on ")
        assert proc.stdout.readline().startswith("time skipping: on, the clock starts at ")
        address = listening.rsplit(" ", 1)[1]
        workers: list[worker.TaskHubGrpcWorker] = []
        c = client.TaskHubGrpcClient(host_address=address)
        try:
            run_worker(address, workers, monthly_invoice, activities=[charge])
            key = uuid.uuid4().hex
            state = c.wait_for_orchestration_completion(
                c.schedule_new_orchestration(monthly_invoice, input=key), timeout=WAIT
            )
            assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
            started, after_month, _ = (
                datetime.fromisoformat(t) for t in json.loads(state.serialized_output or "")["times"]
            )
            assert after_month - started == timedelta(days=30)
        finally:
            for w in workers:
                w.stop()
            c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
