"""Extended sessions end to end: live orchestrations resumed with new events only, and every way a session ends."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from durabletask import client, task
from durabletask._worker.session_cache import ExtendedSessionOptions
from durabletask.worker import VersionFailureStrategy, VersioningOptions, VersionMatchStrategy

from .conftest import Hub, unique_id

COMPLETED = client.OrchestrationStatus.COMPLETED
FAILED = client.OrchestrationStatus.FAILED
TERMINATED = client.OrchestrationStatus.TERMINATED


def add_one(ctx: task.ActivityContext, value: int) -> int:
    return value + 1


def times_ten(ctx: task.ActivityContext, value: int) -> int:
    return value * 10


def counting(ctx: task.OrchestrationContext, steps: int) -> Any:
    value = 0
    for _ in range(steps):
        value = yield ctx.call_activity(add_one, input=value)
    return value


def step_then_wait(ctx: task.OrchestrationContext, _: Any) -> Any:
    first = yield ctx.call_activity(add_one, input=1)
    extra = yield ctx.wait_for_external_event("more")
    second = yield ctx.call_activity(add_one, input=first + extra)
    return second


def changed_step_then_wait(ctx: task.OrchestrationContext, _: Any) -> Any:
    # The same orchestration name with different code: replaying old history must be detected.
    first = yield ctx.call_activity(times_ten, input=1)
    extra = yield ctx.wait_for_external_event("more")
    return first + extra


def looping(ctx: task.OrchestrationContext, state: list[int]) -> Any:
    value = yield ctx.call_activity(add_one, input=state[-1])
    state = [*state, value]
    if len(state) < 5:
        ctx.continue_as_new(state)
        return None
    return state


def wait_forever(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.call_activity(add_one, input=0)
    yield ctx.wait_for_external_event("never")
    return value


def counters(hub: Hub) -> tuple[int, int]:
    if hub.server is None:
        pytest.skip("needs the in-process emulator's counters")
    return hub.server.engine.continued_sessions, hub.server.dispatcher.history_requests


@pytest.mark.emulator_internals("reads the emulator's session counters")
def test_each_step_after_the_first_is_a_continuation(hub: Hub) -> None:
    continued, _ = counters(hub)
    hub.start_worker([counting], [add_one])
    c = hub.client()
    iid = c.schedule_new_orchestration(counting, input=12)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED
    assert state.serialized_output == "12"
    assert hub.server is not None
    assert hub.server.engine.continued_sessions - continued >= 12


@pytest.mark.emulator_internals("reads the emulator's session counters")
def test_sessions_can_be_turned_off(hub: Hub) -> None:
    continued, _ = counters(hub)
    hub.start_worker([counting], [add_one], extended_sessions=ExtendedSessionOptions(max_cached_orchestrations=0))
    c = hub.client()
    iid = c.schedule_new_orchestration(counting, input=4)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.serialized_output == "4"
    assert hub.server is not None and hub.server.engine.continued_sessions == continued


CALLS: list[str] = []


def counted(ctx: task.OrchestrationContext, steps: int) -> Any:
    CALLS.append(ctx.instance_id)  # once per call of the function, replays included
    value = 0
    for _ in range(steps):
        value = yield ctx.call_activity(add_one, input=value)
    return value


@pytest.mark.emulator_internals("relies on the emulator's extended sessions, our protocol extension")
@pytest.mark.parametrize(("options", "calls"), [(ExtendedSessionOptions(max_cached_orchestrations=0), 4), (None, 1)])
def test_orchestrator_calls_per_turn(hub: Hub, options: ExtendedSessionOptions | None, calls: int) -> None:
    # Off: one call per turn (the start and each of three results), replaying from the start as Microsoft's SDK
    # does. On (the default): the live orchestration resumes, so the function is called once for the whole run.
    hub.start_worker([counted], [add_one], **({"extended_sessions": options} if options else {}))
    c = hub.client()
    iid = c.schedule_new_orchestration(counted, input=3, instance_id=unique_id("calls"))
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.serialized_output == "3"
    turns = [type(e).__name__ for e in c.get_orchestration_history(iid)].count("OrchestratorStartedEvent")
    assert (turns, CALLS.count(iid)) == (4, calls)


@pytest.mark.emulator_internals("reads the emulator's session counters")
def test_many_more_instances_than_the_cache_holds(hub: Hub) -> None:
    _, misses = counters(hub)
    worker = hub.start_worker(
        [counting], [add_one], extended_sessions=ExtendedSessionOptions(max_cached_orchestrations=3)
    )
    c = hub.client()
    ids = [c.schedule_new_orchestration(counting, input=5, instance_id=unique_id()) for _ in range(40)]
    for iid in ids:
        state = c.wait_for_orchestration_completion(iid, timeout=90)
        assert state is not None and state.runtime_status == COMPLETED
        assert state.serialized_output == "5"
    run = worker._run
    assert run is not None and run.sessions is not None
    assert len(run.sessions) <= 3
    assert run.sessions.evictions > 0
    assert hub.server is not None and hub.server.dispatcher.history_requests > misses


def test_a_restarted_worker_rebuilds_from_the_full_history(hub: Hub) -> None:
    first = hub.start_worker([step_then_wait], [add_one])
    c = hub.client()
    iid = c.schedule_new_orchestration(step_then_wait)
    wait_for_custom_history(c, iid, "taskCompleted")
    first.stop()
    hub.start_worker([step_then_wait], [add_one])
    c.raise_orchestration_event(iid, "more", data=5)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED
    assert state.serialized_output == "8"


def test_changed_code_on_a_new_worker_is_still_detected_as_non_deterministic(hub: Hub) -> None:
    first = hub.worker()
    first.add_orchestrator(step_then_wait, name="flow")
    first.add_activity(add_one)
    first.start()
    c = hub.client()
    iid = c.schedule_new_orchestration("flow")
    wait_for_custom_history(c, iid, "taskCompleted")
    first.stop()
    second = hub.worker()
    second.add_orchestrator(changed_step_then_wait, name="flow")
    second.add_activity(times_ten)
    second.start()
    c.raise_orchestration_event(iid, "more", data=5)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == FAILED
    assert state.failure_details is not None
    assert "NonDeterminism" in (state.failure_details.error_type or "")


def test_a_worker_of_another_version_checks_the_version_again(hub: Hub) -> None:
    first = hub.worker()
    first.use_versioning(VersioningOptions(version="1", match_strategy=VersionMatchStrategy.STRICT))
    first.add_orchestrator(step_then_wait)
    first.add_activity(add_one)
    first.start()
    c = hub.client()
    iid = c.schedule_new_orchestration(step_then_wait, version="1")
    wait_for_custom_history(c, iid, "taskCompleted")
    first.stop()
    second = hub.worker()
    second.use_versioning(
        VersioningOptions(
            version="2",
            match_strategy=VersionMatchStrategy.STRICT,
            failure_strategy=VersionFailureStrategy.FAIL,
        )
    )
    second.add_orchestrator(step_then_wait)
    second.add_activity(add_one)
    second.start()
    c.raise_orchestration_event(iid, "more", data=5)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == FAILED
    assert state.failure_details is not None and state.failure_details.error_type == "VersionMismatch"


def test_continue_as_new_gets_a_fresh_session_per_execution(hub: Hub) -> None:
    hub.start_worker([looping], [add_one])
    c = hub.client()
    iid = c.schedule_new_orchestration(looping, input=[0])
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED
    assert json.loads(state.serialized_output or "null") == [0, 1, 2, 3, 4]


def test_terminating_a_held_orchestration(hub: Hub) -> None:
    hub.start_worker([wait_forever], [add_one])
    c = hub.client()
    iid = c.schedule_new_orchestration(wait_forever)
    wait_for_custom_history(c, iid, "taskCompleted")
    c.terminate_orchestration(iid, output="stop")
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == TERMINATED


def wait_for_custom_history(c: client.TaskHubGrpcClient, iid: str, kind: str, timeout: float = 30) -> None:
    """Waits until the instance's history holds an event of ``kind``, so the work item that saw it has ended.

    A turn's events are stored when its work item completes, all at once (there is no orchestratorCompleted
    event to wait for: DTS stores none, and neither does the emulator).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = [type(e).__name__ for e in c.get_orchestration_history(iid)]
        if any(kind.lower() in name.lower() for name in names):
            return
        time.sleep(0.02)  # bounded polling: there is no server-side wait for a history event
    raise AssertionError(f"{iid} never recorded {kind}")
