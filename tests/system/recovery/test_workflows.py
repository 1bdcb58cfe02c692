"""Recovery by workflow design: duplicate approvals, versioned deployments, uncertain writes, cancellation."""

from __future__ import annotations

import json
import threading

from durabletask import client
from tests.support.reliability import assert_exactly_once, kinds, save_history, wait_done, wait_until

from .conftest import Cluster

COMPLETED = client.OrchestrationStatus.COMPLETED
TERMINATED = client.OrchestrationStatus.TERMINATED


def test_duplicate_approval_is_acted_on_once(cluster: Cluster) -> None:
    cluster.start_worker()
    c = cluster.client
    early = c.schedule_new_orchestration("approval", instance_id=cluster.id("dup-approval-early"))
    late = c.schedule_new_orchestration("approval", instance_id=cluster.id("dup-approval-late"))
    # Both copies arrive before the wait for one instance, and while it is already waiting for the other.
    c.raise_orchestration_event(early, "approval", data="alice")
    c.raise_orchestration_event(early, "approval", data="alice")
    wait_until(lambda: "taskCompleted" in cluster.history_kinds(late), 30, "the preparation step")
    c.raise_orchestration_event(late, "approval", data="bob")
    c.raise_orchestration_event(late, "approval", data="bob")
    states = wait_done(c, [early, late], 60)

    for iid, who in ((early, "alice"), (late, "bob")):
        assert states[iid].runtime_status == COMPLETED, states[iid].failure_details
        assert json.loads(states[iid].serialized_output or "null") == {"approved_by": who}
        events = cluster.history(iid)
        assert_exactly_once(events)
        assert [e.taskScheduled.name for e in events if e.HasField("taskScheduled")] == ["step", "step"]
        assert cluster.ledger.attempts()[f"{iid}/apply"] == 1
    save_history("recovery-3-duplicate-approval", cluster.history(late))


def test_v2_deployed_while_v1_runs(cluster: Cluster) -> None:
    c = cluster.client
    cluster.start_worker(version="1")
    v1 = [c.schedule_new_orchestration("order", instance_id=cluster.id(f"order-v1-{i}"), version="1") for i in range(5)]
    for iid in v1:
        wait_until(lambda iid=iid: cluster.ledger.has(f"{iid}/v1/reserve"), 30, f"{iid} to reserve")  # type: ignore[misc]
    cluster.start_worker(version="2")  # the deployment: v2 runs next to v1, which drains
    v2 = [c.schedule_new_orchestration("order", instance_id=cluster.id(f"order-v2-{i}"), version="2") for i in range(5)]
    for iid in v2:
        wait_until(lambda iid=iid: cluster.ledger.has(f"{iid}/v2/reserve"), 30, f"{iid} to reserve")  # type: ignore[misc]
    for iid in v1 + v2:
        c.raise_orchestration_event(iid, "go")
    states = wait_done(c, v1 + v2, 60)

    for iid in v1 + v2:
        expected = "v1" if iid in v1 else "v2"
        assert states[iid].runtime_status == COMPLETED, states[iid].failure_details
        assert json.loads(states[iid].serialized_output or "null") == expected
        assert_exactly_once(cluster.history(iid))
    effects = set(cluster.ledger.effects())
    assert {k for k in effects if "/v1/" in k} == {f"{i}/v1/{s}" for i in v1 for s in ("reserve", "ship")}
    assert {k for k in effects if "/v2/" in k} == {f"{i}/v2/{s}" for i in v2 for s in ("check", "reserve", "ship")}
    save_history("recovery-4-v1-finishes-on-v1", cluster.history(v1[0]))
    save_history("recovery-4-v2-starts-on-v2", cluster.history(v2[0]))


def test_uncertain_write_reconciles_through_the_effect_key(cluster: Cluster) -> None:
    cluster.start_worker()
    c = cluster.client
    after, before, ok = cluster.id("write-lost-after"), cluster.id("write-lost-before"), cluster.id("write-ok")
    cases = {after: "lost_after", before: "lost_before", ok: "ok"}
    for iid, mode in cases.items():
        c.schedule_new_orchestration("uncertain_write", input=mode, instance_id=iid)
    states = wait_done(c, list(cases), 60)

    outputs = {iid: json.loads(s.serialized_output or "null") for iid, s in states.items()}
    assert outputs == {after: "reconciled", before: "rewritten", ok: "written"}
    attempts = cluster.ledger.attempts()
    # The write whose answer was lost happened once and was found by its key, not written again.
    assert attempts[f"{after}/write"] == 1
    assert attempts[f"{before}/write"] == 1  # only the second write reached the ledger
    assert set(cluster.ledger.effects()) == {f"{iid}/write" for iid in cases}
    events = cluster.history(after)
    assert kinds(events).count("taskFailed") == 1
    assert "TimeoutError" in next(e.taskFailed.failureDetails.errorType for e in events if e.HasField("taskFailed"))
    assert_exactly_once(events)
    save_history("recovery-5-uncertain-write-reconciled", events)


def _release(cluster: Cluster, iid: str) -> None:
    """Lets the extraction finish after the instance ended, and gives its late result time to arrive."""
    cluster.ledger.path.with_name(f"release-{iid}").touch()
    wait_until(lambda: cluster.ledger.has(f"{iid}/extracted"), 30, "the extraction to finish late")
    # A bounded negative check: the worker sends the result right after the effect; nothing may change.
    threading.Event().wait(0.5)


def test_cancel_during_long_extraction_compensates(cluster: Cluster) -> None:
    cluster.start_worker()
    c = cluster.client
    iid = c.schedule_new_orchestration("extraction", instance_id=cluster.id("extract-cancel"))
    wait_until(lambda: cluster.ledger.has(f"{iid}/extract-started"), 30, "the extraction to start")
    c.raise_orchestration_event(iid, "cancel")
    state = wait_done(c, [iid], 30)[iid]
    assert state.runtime_status == COMPLETED and json.loads(state.serialized_output or "null") == "cancelled"
    before = cluster.history(iid)

    _release(cluster, iid)
    # The late result changes nothing: same state, no load step, compensation ran exactly once.
    wait_until(lambda: cluster.ledger.attempts()[f"{iid}/extracted"] == 1, 10, "the late result")
    after = c.get_orchestration_state(iid)
    assert after is not None and after.runtime_status == COMPLETED and after.serialized_output == '"cancelled"'
    assert kinds(cluster.history(iid))[: len(before)] == kinds(before)
    assert "executionCompleted" in kinds(before) and kinds(before).count("executionCompleted") == 1
    assert cluster.ledger.attempts()[f"{iid}/compensate"] == 1
    assert not cluster.ledger.has(f"{iid}/load")
    save_history("recovery-6-cancel-compensates", cluster.history(iid))


def test_terminate_during_long_extraction_runs_no_more_code(cluster: Cluster) -> None:
    cluster.start_worker()
    c = cluster.client
    iid = c.schedule_new_orchestration("extraction", instance_id=cluster.id("extract-terminate"))
    wait_until(lambda: cluster.ledger.has(f"{iid}/extract-started"), 30, "the extraction to start")
    c.terminate_orchestration(iid, output="stopped by operator")
    state = wait_done(c, [iid], 30)[iid]
    assert state.runtime_status == TERMINATED

    _release(cluster, iid)
    after = c.get_orchestration_state(iid)
    assert after is not None and after.runtime_status == TERMINATED
    assert json.loads(after.serialized_output or "null") == "stopped by operator"
    events = cluster.history(iid)
    # Terminating runs no orchestrator code: neither compensation nor the load step happened.
    assert not cluster.ledger.has(f"{iid}/compensate") and not cluster.ledger.has(f"{iid}/load")
    assert "taskCompleted" not in kinds(events)
    save_history("recovery-6-terminate", events)
