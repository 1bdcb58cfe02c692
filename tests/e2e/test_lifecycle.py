"""Operator lifecycle end to end: rewind, restart, recursive terminate and purge, with clear errors."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from durabletask import client, task
from tests.support.reliability import wait_until

from .conftest import Hub, unique_id

RUNS: Counter[str] = Counter()
BROKEN: dict[str, bool] = {}

COMPLETED = client.OrchestrationStatus.COMPLETED
FAILED = client.OrchestrationStatus.FAILED
TERMINATED = client.OrchestrationStatus.TERMINATED


def step(ctx: task.ActivityContext, name: str) -> str:
    RUNS[name] += 1
    if BROKEN.get(name):
        raise RuntimeError(f"{name} is broken")
    return f"{name}-ok"


def etl(ctx: task.OrchestrationContext, tag: str) -> Any:
    extracted = yield ctx.call_activity(step, input=f"extract-{tag}")
    transformed = yield ctx.call_activity(step, input=f"transform-{tag}")
    loaded = yield ctx.call_activity(step, input=f"load-{tag}")
    return [extracted, transformed, loaded]


def child(ctx: task.OrchestrationContext, name: str) -> Any:
    return (yield ctx.call_activity(step, input=name))


def parent(ctx: task.OrchestrationContext, tag: str) -> Any:
    results = yield task.when_all([ctx.call_sub_orchestrator(child, input=f"{tag}-{i}",
                                                             instance_id=f"{ctx.instance_id}-c{i}")
                                   for i in range(3)])
    return results


def waits(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.wait_for_external_event("never")


def parent_of_waiters(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield task.when_all([ctx.call_sub_orchestrator(waits, instance_id=f"{ctx.instance_id}-w{i}") for i in range(2)])


def _kinds(c: client.TaskHubGrpcClient, iid: str) -> list[str]:
    return [type(e).__name__ for e in c.get_orchestration_history(iid)]


def test_rewind_runs_only_the_failed_step_again(hub: Hub) -> None:
    hub.start_worker([etl], [step])
    c = hub.client()
    tag = unique_id("etl")
    BROKEN[f"load-{tag}"] = True
    iid = c.schedule_new_orchestration(etl, input=tag)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == FAILED

    BROKEN[f"load-{tag}"] = False  # the cause is fixed
    c.rewind_orchestration(iid, reason="load fixed")
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.get_output() == [f"extract-{tag}-ok", f"transform-{tag}-ok", f"load-{tag}-ok"]
    assert (RUNS[f"extract-{tag}"], RUNS[f"transform-{tag}"], RUNS[f"load-{tag}"]) == (1, 1, 2)
    assert "ExecutionRewoundEvent" in _kinds(c, iid)


def test_rewind_fan_out_with_failed_sub_orchestrations(hub: Hub) -> None:
    hub.start_worker([parent, child], [step])
    c = hub.client()
    tag = unique_id("fan")
    BROKEN[f"{tag}-0"] = BROKEN[f"{tag}-2"] = True
    iid = c.schedule_new_orchestration(parent, input=tag)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == FAILED
    BROKEN[f"{tag}-0"] = BROKEN[f"{tag}-2"] = False
    c.rewind_orchestration(iid, reason="children fixed")
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.get_output() == [f"{tag}-{i}-ok" for i in range(3)]
    assert [RUNS[f"{tag}-{i}"] for i in range(3)] == [2, 1, 2]


def test_rewind_rejects_ineligible_instances_clearly(hub: Hub) -> None:
    hub.start_worker([waits])
    c = hub.client()
    iid = c.schedule_new_orchestration(waits)
    c.wait_for_orchestration_start(iid, timeout=30)
    with pytest.raises(client.FailedPreconditionError) as excinfo:
        c.rewind_orchestration(iid)
    assert "FAILED" in str(excinfo.value) and iid in str(excinfo.value)
    with pytest.raises(client.NotFoundError) as excinfo2:
        c.rewind_orchestration("no-such-instance")
    assert "no-such-instance" in str(excinfo2.value)


def test_restart_with_same_and_new_id(hub: Hub) -> None:
    hub.start_worker([etl], [step])
    c = hub.client()
    tag = unique_id("rs")
    iid = c.schedule_new_orchestration(etl, input=tag, version="3")
    c.wait_for_orchestration_completion(iid, timeout=30)
    same = c.restart_orchestration(iid)
    assert same == iid
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED and state.get_input() == tag
    new = c.restart_orchestration(iid, restart_with_new_instance_id=True)
    assert new != iid
    state = c.wait_for_orchestration_completion(new, timeout=30)
    assert state is not None and state.name == "etl" and state.get_input() == tag and state.version == "3"
    assert RUNS[f"extract-{tag}"] == 3


def test_recursive_terminate_and_purge(hub: Hub) -> None:
    hub.start_worker([parent_of_waiters, waits])
    c = hub.client()
    iid = c.schedule_new_orchestration(parent_of_waiters, instance_id=unique_id("p"))
    children = [f"{iid}-w{i}" for i in range(2)]
    for cid in children:
        # The parent's first turn makes the children; waiting for the start of one not made yet returns at once.
        wait_until(lambda cid=cid: c.get_orchestration_state(cid) is not None, 30, f"{cid} to be created")
        c.wait_for_orchestration_start(cid, timeout=30)
    c.terminate_orchestration(iid, output="stop all")
    for target in [iid, *children]:
        state = c.wait_for_orchestration_completion(target, timeout=30)
        assert state is not None and state.runtime_status == TERMINATED, target
    result = c.purge_orchestration(iid, recursive=True)
    assert result.deleted_instance_count == 3
    assert all(c.get_orchestration_state(x) is None for x in [iid, *children])
