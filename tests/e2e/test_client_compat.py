"""Client behaviour an application written for durabletask 1.12 relies on, against the emulator."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from durabletask import client, task

from .conftest import Hub, unique_id


def echo(ctx: task.OrchestrationContext, value: Any) -> Any:
    return value


async def test_sync_client_blocks_and_works_inside_a_running_event_loop(hub: Hub) -> None:
    # A pytest-asyncio test, like a FastAPI handler or a Jupyter cell, runs inside an event loop.
    hub.start_worker([echo])
    c = hub.client()
    iid = c.schedule_new_orchestration(echo, input=5, instance_id=unique_id("loop"))
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.get_output() == 5
    assert asyncio.get_running_loop().is_running()


@pytest.mark.local_only("builds a plain TaskHubGrpcClient, without the credential of the scheduler client")
async def test_the_event_loop_guard_is_an_opt_in(hub: Hub) -> None:
    c = client.TaskHubGrpcClient(host_address=hub.address, metadata=hub.metadata, fail_in_event_loop=True)
    try:
        with pytest.raises(client.SyncCallInEventLoopError, match="fail_in_event_loop"):
            c.get_orchestration_state("anything")
        assert await asyncio.to_thread(c.get_orchestration_state, "anything") is None
    finally:
        c.close()


def test_state_tags_are_exactly_the_callers(hub: Hub) -> None:
    hub.start_worker([echo])
    c = hub.client()
    tagged = c.schedule_new_orchestration(echo, input=1, instance_id=unique_id("tags"), tags={"team": "ops"})
    untagged = c.schedule_new_orchestration(echo, input=2, instance_id=unique_id("tags"))
    for iid, expected in ((tagged, {"team": "ops"}), (untagged, None)):
        state = c.wait_for_orchestration_completion(iid, timeout=30)
        assert state is not None and state.tags == expected
        listed = [s for s in c.get_all_orchestration_states(client.OrchestrationQuery()) if s.instance_id == iid]
        assert [s.tags for s in listed] == [expected]
        starts = [e for e in c.get_orchestration_history(iid) if type(e).__name__ == "ExecutionStartedEvent"]
        assert [e.tags for e in starts] == [expected]


def test_a_reserved_tag_is_refused_and_attach_still_uses_the_hidden_fingerprint(hub: Hub) -> None:
    hub.start_worker([echo])
    c = hub.client()
    iid = unique_id("tags")
    with pytest.raises(client.InvalidArgumentError, match=re.escape("'durabletask.fingerprint.input-sha256'")):
        c.schedule_new_orchestration(echo, input=1, instance_id=iid, tags={"durabletask.fingerprint.input-sha256": "0"})
    assert c.get_orchestration_state(iid) is None  # nothing was sent

    c.schedule_new_orchestration(echo, input=1, instance_id=iid, tags={"team": "ops"})
    c.wait_for_orchestration_completion(iid, timeout=30)
    again = c.attach_orchestration(echo, instance_id=iid, input=1)
    assert again.action is client.AttachAction.ALREADY_COMPLETED and again.result() == 1
    assert again.state is not None and again.state.tags == {"team": "ops"}
    with pytest.raises(client.FingerprintMismatchError, match="input"):
        c.attach_orchestration(echo, instance_id=iid, input=2)
