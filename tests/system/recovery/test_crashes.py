"""Recovery from crashes: SIGKILLed workers and emulators lose nothing and repeat no completed step."""

from __future__ import annotations

import json

import pytest

from durabletask import client
from tests.support.reliability import assert_exactly_once, fetch_history, save_history, wait_done, wait_until

from .conftest import Cluster

COMPLETED = client.OrchestrationStatus.COMPLETED


def test_worker_killed_after_three_steps_resumes_without_repeating_them(cluster: Cluster) -> None:
    worker = cluster.start_worker()
    iid = cluster.client.schedule_new_orchestration("steps", input=6, instance_id=cluster.id("kill-worker-after-three"))
    wait_until(lambda: cluster.history_kinds(iid).count("taskCompleted") >= 3, 60, "three completed steps")
    cluster.kill_worker(worker)
    # Each step returns its effect key, so the history names the steps that were done at the crash.
    completed_before = {
        json.loads(e.taskCompleted.result.value)
        for e in cluster.history(iid)
        if e.HasField("taskCompleted")
    }
    cluster.start_worker()
    state = wait_done(cluster.client, [iid], 60)[iid]

    assert state.runtime_status == COMPLETED, state.failure_details
    assert json.loads(state.serialized_output or "null") == [f"{iid}/step/{i}" for i in range(6)]
    events = cluster.history(iid)
    save_history("recovery-1-kill-worker-after-three-steps", events)
    assert_exactly_once(events)
    attempts = cluster.ledger.attempts()
    assert set(cluster.ledger.effects()) == {f"{iid}/step/{i}" for i in range(6)}
    # Steps whose completion was recorded before the crash never ran again.
    for key in completed_before:
        assert attempts[key] == 1, attempts
    assert len(completed_before) >= 3


@pytest.mark.emulator_internals("kills and restarts the emulator")
def test_approval_wait_survives_worker_and_emulator_crash(cluster: Cluster) -> None:
    worker = cluster.start_worker()
    iid = cluster.client.schedule_new_orchestration("approval", instance_id="approval-crash")
    wait_until(lambda: "taskCompleted" in cluster.history_kinds(iid), 60, "the preparation step")
    cluster.kill_worker(worker)
    cluster.kill_emulator()
    cluster.start_emulator()
    cluster.start_worker()
    cluster.client.raise_orchestration_event(iid, "approval", data="alice")
    state = wait_done(cluster.client, [iid], 60)[iid]

    assert state.runtime_status == COMPLETED, state.failure_details
    assert json.loads(state.serialized_output or "null") == {"approved_by": "alice"}
    events = fetch_history(cluster.address, iid)
    save_history("recovery-2-approval-across-crashes", events)
    assert_exactly_once(events)
    assert cluster.ledger.attempts() == {f"{iid}/prepare": 1, f"{iid}/apply": 1}


@pytest.mark.emulator_internals("kills and restarts the emulator")
def test_emulator_kill_9_with_hundreds_in_flight_loses_none(cluster: Cluster) -> None:
    count = 200
    for _ in range(2):
        cluster.start_worker()
    ids = [
        cluster.client.schedule_new_orchestration("pipeline", input=3, instance_id=f"many-{i}") for i in range(count)
    ]
    wait_until(lambda: len(cluster.ledger.effects()) >= count, 90, f"{count} effects before the crash")
    cluster.kill_emulator()
    done_at_crash = len(cluster.ledger.effects())
    cluster.start_emulator()
    states = wait_done(cluster.client, ids, 120)

    assert done_at_crash < 3 * count, "everything finished before the crash; the test proved nothing"
    assert {iid: s.runtime_status for iid, s in states.items()} == dict.fromkeys(ids, COMPLETED)
    assert set(cluster.ledger.effects()) == {f"many-{i}/{s}" for i in range(count) for s in range(3)}
    for iid in ids:
        events = fetch_history(cluster.address, iid)
        assert_exactly_once(events)
    save_history("recovery-7-emulator-kill-9-many", fetch_history(cluster.address, ids[0]))
