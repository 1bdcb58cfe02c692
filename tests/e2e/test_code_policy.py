"""Workers apply the code-mismatch policy to instances started with other orchestrator code."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from durabletask import client, task
from durabletask.worker import CodeMismatchPolicy
from tests.conftest import watch_log

from .conftest import Hub, unique_id


def flow(ctx: task.OrchestrationContext, value: int) -> Any:
    return value + 1


def flow_changed(ctx: task.OrchestrationContext, value: int) -> Any:
    return value + 1000  # same name once registered, different code


def test_fail_policy_fails_a_mismatched_instance(hub: Hub) -> None:
    w = hub.worker()
    w.add_orchestrator(flow_changed, name="flow")
    w.use_code_mismatch_policy(CodeMismatchPolicy.FAIL)
    w.start()
    c = hub.client()
    iid = c.schedule_new_orchestration(flow, input=1)  # records flow's code hash
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    assert state.failure_details is not None
    assert "was started with code sha256" in state.failure_details.message


def test_abandon_policy_leaves_it_for_a_matching_worker(hub: Hub) -> None:
    iid = unique_id("stale")
    log = logging.getLogger(f"tests.code_policy.{iid}")
    hand_back = f"handing back the orchestration work item for '{iid}'"
    with watch_log(log, hand_back, logging.INFO) as hand_backs:
        stale = hub.worker(logger=log)
        stale.add_orchestrator(flow_changed, name="flow")
        stale.use_code_mismatch_policy(CodeMismatchPolicy.ABANDON)
        stale.start()
        c = hub.client()
        c.schedule_new_orchestration(flow, input=1, instance_id=iid)
        # A third hand-back means the backend took the first two back and delivered the item again each
        # time; had the stale worker run it instead, nothing would come back and the wait would fail.
        hand_backs.wait_for(3)
        state = c.get_orchestration_state(iid)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.PENDING
    stale.stop()
    hub.start_worker([flow])
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.serialized_output == "2"


def test_log_policy_runs_it_and_warns(hub: Hub, caplog: pytest.LogCaptureFixture) -> None:
    w = hub.worker(logger=logging.getLogger("tests.code_policy"))
    w.add_orchestrator(flow_changed, name="flow")
    w.start()
    c = hub.client()
    with caplog.at_level(logging.WARNING):
        iid = c.schedule_new_orchestration(flow, input=1)
        state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.serialized_output == "1001"
    assert any("was started with code sha256" in r.getMessage() for r in caplog.records)
