"""Client operations end to end: queries, paging, purge, ID reuse, scheduled starts, and the async client."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from durabletask import client, task

from .conftest import Hub, unique_id

COMPLETED = client.OrchestrationStatus.COMPLETED


def echo(ctx: task.OrchestrationContext, value: Any) -> Any:
    return value


def waits(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.wait_for_external_event("go")
    return value


@pytest.mark.whole_taskhub("expects the hub to hold only its own instances")
def test_query_filters_and_paging(hub: Hub) -> None:
    hub.start_worker([echo, waits])
    c = hub.client()
    prefix = unique_id("q")
    done = [c.schedule_new_orchestration(echo, input=i, instance_id=f"{prefix}-done-{i}") for i in range(5)]
    pending = c.schedule_new_orchestration(waits, instance_id=f"{prefix}-wait-0")
    for iid in done:
        c.wait_for_orchestration_completion(iid, timeout=30)
    c.wait_for_orchestration_start(pending, timeout=30)

    completed = c.get_all_orchestration_states(
        client.OrchestrationQuery(runtime_status=[COMPLETED], fetch_inputs_and_outputs=True))
    assert sorted(s.instance_id for s in completed) == sorted(done)
    assert {s.serialized_output for s in completed} == {str(i) for i in range(5)}

    prefixed = c.get_all_orchestration_states(client.OrchestrationQuery(instance_id_prefix=f"{prefix}-wait"))
    assert [s.instance_id for s in prefixed] == [pending]

    paged = c.get_all_orchestration_states(client.OrchestrationQuery(max_instance_count=2))
    assert len({s.instance_id for s in paged}) == 6

    page = c.list_instance_ids(runtime_status=[COMPLETED], page_size=2)
    seen = list(page.items)
    while page.continuation_token:
        page = c.list_instance_ids(runtime_status=[COMPLETED], page_size=2,
                                   continuation_token=page.continuation_token)
        seen.extend(page.items)
    assert sorted(seen) == sorted(done)


@pytest.mark.whole_taskhub("purges every completed instance of the last minutes")
def test_purge_by_id_and_by_filter(hub: Hub) -> None:
    hub.start_worker([echo, waits])
    c = hub.client()
    ids = [c.schedule_new_orchestration(echo, input=i) for i in range(3)]
    for iid in ids:
        c.wait_for_orchestration_completion(iid, timeout=30)
    running = c.schedule_new_orchestration(waits)
    c.wait_for_orchestration_start(running, timeout=30)

    result = c.purge_orchestration(ids[0])
    assert result.deleted_instance_count == 1
    assert c.get_orchestration_state(ids[0]) is None

    result = c.purge_orchestrations_by(
        created_time_from=datetime.now(timezone.utc) - timedelta(minutes=5),
        runtime_status=[COMPLETED])
    assert result.deleted_instance_count == 2
    # Only terminal instances are purged.
    assert c.get_orchestration_state(running) is not None


def test_id_reuse_policy(hub: Hub) -> None:
    hub.start_worker([echo, waits])
    c = hub.client()
    iid = unique_id()
    c.schedule_new_orchestration(waits, instance_id=iid)
    c.wait_for_orchestration_start(iid, timeout=30)
    with pytest.raises(Exception) as excinfo:  # ALREADY_EXISTS for a running instance without a policy
        c.schedule_new_orchestration(waits, instance_id=iid)
    assert "already exists" in str(excinfo.value).lower()
    c.raise_orchestration_event(iid, "go", data=1)
    c.wait_for_orchestration_completion(iid, timeout=30)
    # A completed instance is replaced.
    c.schedule_new_orchestration(echo, input="second", instance_id=iid)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.serialized_output == '"second"'


def test_scheduled_start_is_honoured(hub: Hub) -> None:
    hub.start_worker([echo])
    c = hub.client()
    start_at = datetime.now(timezone.utc) + timedelta(seconds=1.5)
    iid = c.schedule_new_orchestration(echo, input=1, start_at=start_at)
    state = c.get_orchestration_state(iid)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.PENDING
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED
    # Instance times are naive UTC, as in the compatible API.
    assert state.last_updated_at.tzinfo is None
    assert state.last_updated_at >= start_at.replace(tzinfo=None) - timedelta(milliseconds=50)


def test_async_client_full_flow(hub: Hub) -> None:
    hub.start_worker([waits])

    async def run() -> None:
        async with hub.async_client() as c:
            iid = await c.schedule_new_orchestration(waits, input=None)
            started = await c.wait_for_orchestration_start(iid, timeout=30)
            assert started is not None
            await c.raise_orchestration_event(iid, "go", data="async")
            state = await c.wait_for_orchestration_completion(iid, timeout=30)
            assert state is not None and state.runtime_status == COMPLETED
            assert state.serialized_output == '"async"'
            history = await c.get_orchestration_history(iid)
            kinds = [type(e).__name__ for e in history]
            assert kinds[0] in {"OrchestratorStartedEvent", "ExecutionStartedEvent"}
            assert "EventRaisedEvent" in kinds
            result = await c.purge_orchestration(iid)
            assert result.deleted_instance_count == 1

    asyncio.run(run())
