"""Durable streams end to end: publish from orchestrators and activities, subscribe from both clients."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from durabletask import client, task
from durabletask._streams.wire import StreamCursorError, StreamNotFoundError

from .conftest import Hub, unique_id

COMPLETED = client.OrchestrationStatus.COMPLETED


def talker(ctx: task.OrchestrationContext, n: int) -> Any:
    ctx.publish({"step": "start"}, topic="status")
    for i in range(n):
        ctx.publish(i, topic="count")
        yield ctx.create_timer(ctx.current_utc_datetime)
    tokens = yield ctx.call_activity(speak, input=["Hel", "lo", "!"])
    ctx.publish({"step": "done"}, topic="status")
    return tokens


def speak(ctx: task.ActivityContext, tokens: list[str]) -> int:
    for token in tokens:
        ctx.publish({"token": token}, topic="tokens")
    return len(tokens)


def _run(hub: Hub, n: int = 3) -> tuple[client.TaskHubGrpcClient, str]:
    hub.start_worker([talker], [speak])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(talker, input=n, instance_id=unique_id("stream"))
    return c, instance_id


def test_every_item_arrives_once_in_order_and_the_iteration_ends(hub: Hub) -> None:
    c, instance_id = _run(hub)
    items = list(c.subscribe(instance_id, timeout=60))
    state = c.get_orchestration_state(instance_id)
    assert state is not None and state.runtime_status == COMPLETED
    assert [(i.topic, i.data) for i in items] == [
        ("status", {"step": "start"}),
        ("count", 0),
        ("count", 1),
        ("count", 2),
        ("tokens", {"token": "Hel"}),
        ("tokens", {"token": "lo"}),
        ("tokens", {"token": "!"}),
        ("status", {"step": "done"}),
    ]
    assert [i.id for i in items] == sorted(i.id for i in items) and len({i.id for i in items}) == len(items)
    assert all(i.task_id is None and i.attempt is None for i in items if i.topic != "tokens")
    tokens = [i for i in items if i.topic == "tokens"]
    assert {i.task_id for i in tokens} == {tokens[0].task_id} and tokens[0].task_id is not None
    assert {i.attempt for i in tokens} == {1}


def test_topics_and_resuming_after_a_cursor(hub: Hub) -> None:
    c, instance_id = _run(hub)
    everything = list(c.subscribe(instance_id, timeout=60))
    counts = list(c.subscribe(instance_id, topics=["count"], timeout=60))
    assert [i.data for i in counts] == [0, 1, 2]
    resumed = list(c.subscribe(instance_id, after=everything[3].id, timeout=60))
    assert [i.id for i in resumed] == [i.id for i in everything[4:]]
    assert list(c.subscribe(instance_id, after=everything[-1].id, timeout=60)) == []


def test_the_async_client_gives_the_same_items(hub: Hub) -> None:
    c, instance_id = _run(hub)
    expected = list(c.subscribe(instance_id, timeout=60))

    async def read() -> list[Any]:
        async_client = hub.async_client()
        try:
            return [item async for item in async_client.subscribe(instance_id, timeout=60)]
        finally:
            await async_client.close()

    assert asyncio.run(read()) == expected


def test_orchestrator_items_add_one_history_event_per_turn_and_activity_items_none(hub: Hub) -> None:
    c, instance_id = _run(hub, n=2)
    list(c.subscribe(instance_id, timeout=60))
    events = c.get_orchestration_history(instance_id)
    signals = [e for e in events if type(e).__name__ == "EntityOperationSignaledEvent"]
    # turn 1: start + 0; turn 2: 1; turn 3 (after the second timer) publishes nothing before the activity;
    # the last turn: done. The activity's three tokens are not in the history.
    assert len(signals) == 3


@pytest.mark.adversarial
def test_subscribing_to_a_missing_instance_fails_clearly(hub: Hub) -> None:
    c = hub.client()
    missing = unique_id("missing")
    with pytest.raises(StreamNotFoundError, match=missing):
        next(iter(c.subscribe(missing)))


@pytest.mark.adversarial
def test_a_cursor_of_another_instance_or_malformed_fails_at_the_call(hub: Hub) -> None:
    c, instance_id = _run(hub, n=1)
    first = next(iter(c.subscribe(instance_id, timeout=60)))
    with pytest.raises(StreamCursorError, match="another instance"):
        c.subscribe("someone-else", after=first.id)
    with pytest.raises(StreamCursorError, match="not a stream cursor"):
        c.subscribe(instance_id, after="12")


def unserializable(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.publish(threading.Lock())
    return "unreachable"


@pytest.mark.adversarial
def test_publishing_a_value_that_does_not_serialize_fails_the_orchestration(hub: Hub) -> None:
    hub.start_worker([unserializable])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(unserializable)
    state = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    assert state.failure_details is not None
    assert "publish: the value on topic 'default' (lock) cannot be serialized" in state.failure_details.message
