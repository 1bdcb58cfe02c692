"""Carrier-run attach end to end: start, attach to a running instance, reuse a result, refuse a mismatch, rewind."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from durabletask import client, task

from .conftest import Hub, unique_id

RUNS: Counter[str] = Counter()
BROKEN = {"load": True}


def extract(ctx: task.ActivityContext, source: str) -> list[int]:
    RUNS["extract"] += 1
    return [1, 2, 3]


def load(ctx: task.ActivityContext, rows: list[int]) -> int:
    RUNS["load"] += 1
    if BROKEN["load"]:
        raise ConnectionError("warehouse unreachable")
    return sum(rows)


def etl(ctx: task.OrchestrationContext, source: str) -> Any:
    rows = yield ctx.call_activity(extract, input=source)
    yield ctx.wait_for_external_event("go")
    total = yield ctx.call_activity(load, input=rows)
    return total


def test_attach_starts_attaches_and_reuses(hub: Hub) -> None:
    hub.start_worker([etl], [extract, load])
    c = hub.client()
    BROKEN["load"] = False
    iid = unique_id("attach")
    first = c.attach_orchestration(etl, instance_id=iid, input="db1")
    assert first.action is client.AttachAction.STARTED
    c.wait_for_orchestration_start(iid, timeout=30)

    second = c.attach_orchestration(etl, instance_id=iid, input="db1")
    assert second.action is client.AttachAction.ATTACHED
    assert second.state is not None and second.state.runtime_status != client.OrchestrationStatus.COMPLETED

    c.raise_orchestration_event(iid, "go")
    assert second.result(timeout=30) == 6
    extracted = RUNS["extract"]

    third = c.attach_orchestration(etl, instance_id=iid, input="db1")
    assert third.action is client.AttachAction.ALREADY_COMPLETED
    assert third.result() == 6
    assert RUNS["extract"] == extracted  # nothing ran again
    starts = [e for e in c.get_orchestration_history(iid) if type(e).__name__ == "ExecutionStartedEvent"]
    assert len(starts) == 1


def test_attach_refuses_a_different_run(hub: Hub) -> None:
    hub.start_worker([etl], [extract, load])
    c = hub.client()
    iid = unique_id("attach")
    c.attach_orchestration(etl, instance_id=iid, input="db1")
    with pytest.raises(client.FingerprintMismatchError) as excinfo:
        c.attach_orchestration(etl, instance_id=iid, input="db2", version="2")
    assert [d.split(":")[0] for d in excinfo.value.differences] == ["version", "input"]
    with pytest.raises(client.FingerprintMismatchError, match="orchestrator: recorded 'etl', given 'other'"):
        c.attach_orchestration("other", instance_id=iid, input="db1")


def test_attach_to_failed_raises_or_rewinds(hub: Hub) -> None:
    hub.start_worker([etl], [extract, load])
    c = hub.client()
    BROKEN["load"] = True
    iid = unique_id("attach")
    c.attach_orchestration(etl, instance_id=iid, input="db1")
    c.wait_for_orchestration_start(iid, timeout=30)
    c.raise_orchestration_event(iid, "go")
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    with pytest.raises(client.AttachedInstanceFailedError, match="warehouse unreachable"):
        c.attach_orchestration(etl, instance_id=iid, input="db1")

    BROKEN["load"] = False  # the cause is repaired
    before = dict(RUNS)
    handle = c.attach_orchestration(etl, instance_id=iid, input="db1", rewind_if_failed=True)
    assert handle.action is client.AttachAction.REWOUND
    assert handle.result(timeout=30) == 6
    assert RUNS["extract"] == before["extract"]  # the successful step was reused
    assert RUNS["load"] == before["load"] + 1


def test_async_client_attach(hub: Hub) -> None:
    hub.start_worker([etl], [extract, load])
    BROKEN["load"] = False
    iid = unique_id("attach")

    async def run() -> None:
        async with hub.async_client() as c:
            handle = await c.attach_orchestration(etl, instance_id=iid, input="db3")
            assert handle.action is client.AttachAction.STARTED
            await c.wait_for_orchestration_start(iid, timeout=30)
            again = await c.attach_orchestration(etl, instance_id=iid, input="db3")
            assert again.action is client.AttachAction.ATTACHED
            await c.raise_orchestration_event(iid, "go")
            assert await again.result(timeout=30) == 6

    asyncio.run(run())
