"""Purging removes streams: by instance, by filter, and recursively through sub-orchestrations, from both clients."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from durabletask import client, task
from durabletask._streams import wire
from durabletask.entities import EntityInstanceId

from .conftest import Hub, unique_id

COMPLETED = client.OrchestrationStatus.COMPLETED


def chatter(ctx: task.ActivityContext, count: int) -> int:
    for i in range(count):
        ctx.publish({"i": i, "pad": "x" * 1000})  # about 1 KB each: past 64 KB, the head seals segments
    return count


def chatty(ctx: task.OrchestrationContext, count: int) -> Any:
    ctx.publish("begin")
    return (yield ctx.call_activity(chatter, input=count))


def chatty_parent(ctx: task.OrchestrationContext, child_id: str) -> Any:
    ctx.publish("parent")
    return (yield ctx.call_sub_orchestrator(chatty, input=150, instance_id=child_id))


def lingering(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.publish("still here")
    yield ctx.wait_for_external_event("never")


def _stream_entities(c: client.TaskHubGrpcClient, instance_id: str) -> list[str]:
    """The stream entities of an instance that exist now: its head and the segments its head lists."""
    head = c.get_entity(wire.head_entity(instance_id))
    if head is None:
        return []
    found = [str(wire.head_entity(instance_id))]
    state = json.loads(head.get_state())
    for number, *_ in state["segs"]:
        if c.get_entity(wire.segment_entity(instance_id, number)) is not None:
            found.append(str(wire.segment_entity(instance_id, number)))
    return found


def _until_gone(c: client.TaskHubGrpcClient, entity_ids: list[str]) -> list[str]:
    """Those of ``entity_ids`` still there once they are all gone or 60 s have passed (a hang guard)."""
    deadline = time.monotonic() + 60
    left = list(entity_ids)
    while left and time.monotonic() < deadline:
        left = [e for e in left if c.get_entity(EntityInstanceId.parse(e)) is not None]
        time.sleep(0.05)
    return left


def _finished(c: client.TaskHubGrpcClient, orchestrator: Any, value: Any, instance_id: str) -> list[str]:
    c.schedule_new_orchestration(orchestrator, input=value, instance_id=instance_id)
    list(c.subscribe(instance_id, timeout=120))
    return _stream_entities(c, instance_id)


@pytest.mark.parametrize("async_client", [False, True], ids=["sync", "async"])
def test_a_filter_purge_removes_the_streams_of_the_instances_it_removes_and_no_others(
    hub: Hub, async_client: bool
) -> None:
    hub.start_worker([chatty, lingering], [chatter])
    c = hub.client()
    done = [unique_id("done") for _ in range(2)]
    entities = [e for instance_id in done for e in _finished(c, chatty, 150, instance_id)]
    assert len(entities) >= 4  # two heads, each with sealed segments
    alive = c.schedule_new_orchestration(lingering, instance_id=unique_id("alive"))
    assert next(iter(c.subscribe(alive, timeout=60))).data == "still here"

    if async_client:

        async def purge() -> client.PurgeInstancesResult:
            async with hub.async_client() as ac:
                return await ac.purge_orchestrations_by(runtime_status=[COMPLETED])

        result = asyncio.run(purge())
    else:
        result = c.purge_orchestrations_by(runtime_status=[COMPLETED])
    assert result.deleted_instance_count == 2
    assert _until_gone(c, entities) == []
    assert c.get_entity(wire.head_entity(alive)) is not None  # a running instance keeps its stream
    c.terminate_orchestration(alive)


@pytest.mark.parametrize("async_client", [False, True], ids=["sync", "async"])
def test_a_recursive_purge_removes_the_streams_of_sub_orchestrations(hub: Hub, async_client: bool) -> None:
    hub.start_worker([chatty, chatty_parent], [chatter])
    c = hub.client()
    parent, child = unique_id("parent"), unique_id("child")
    parent_entities = _finished(c, chatty_parent, child, parent)
    list(c.subscribe(child, timeout=120))
    child_entities = _stream_entities(c, child)
    assert parent_entities and len(child_entities) >= 2

    if async_client:

        async def purge() -> client.PurgeInstancesResult:
            async with hub.async_client() as ac:
                return await ac.purge_orchestration(parent, recursive=True)

        result = asyncio.run(purge())
    else:
        result = c.purge_orchestration(parent, recursive=True)
    assert result.deleted_instance_count == 2
    assert _until_gone(c, parent_entities + child_entities) == []


def test_a_purge_that_removes_nothing_leaves_the_stream(hub: Hub) -> None:
    hub.start_worker([lingering])
    c = hub.client()
    alive = c.schedule_new_orchestration(lingering, instance_id=unique_id("alive"))
    next(iter(c.subscribe(alive, timeout=60)))
    # A running instance is not purged: the filter skips it, and naming it purges nothing.
    assert c.purge_orchestrations_by(runtime_status=[COMPLETED]).deleted_instance_count == 0
    assert c.purge_orchestrations_by().deleted_instance_count == 0
    assert c.get_entity(wire.head_entity(alive)) is not None
    c.terminate_orchestration(alive)


@pytest.mark.parametrize("recursive", [True, False])
def test_purging_an_instance_that_does_not_exist_removes_nothing_on_both_clients(hub: Hub, recursive: bool) -> None:
    missing = unique_id("never-started")
    assert hub.client().purge_orchestration(missing, recursive=recursive).deleted_instance_count == 0

    async def purge_async() -> int:
        c = hub.async_client()
        try:
            return (await c.purge_orchestration(missing, recursive=recursive)).deleted_instance_count
        finally:
            await c.close()

    assert asyncio.run(purge_async()) == 0
