"""Durable streams end to end: publish from orchestrators and activities, subscribe from both clients."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task
from durabletask._streams import wire
from durabletask._streams.wire import DROPPED_TOPIC, PublishError, StreamCursorError, StreamNotFoundError
from durabletask.worker import ExtendedSessionOptions

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
    # The run ends while the worker still takes entity work, so its activity's items are stored before the stop.
    state = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED


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


# ---- attempts, commits, sessions, purge and limits -------------------------------------------------------

_FLAKY: dict[str, int] = {}


def flaky_speaker(ctx: task.ActivityContext, key: str) -> str:
    _FLAKY[key] = _FLAKY.get(key, 0) + 1
    ctx.publish(f"try {_FLAKY[key]}", topic="tokens")
    if _FLAKY[key] == 1:
        raise RuntimeError("the model dropped the connection")
    return "ok"


def retrying(ctx: task.OrchestrationContext, key: str) -> Any:
    policy = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=10), max_number_of_attempts=3)
    return (yield ctx.call_activity(flaky_speaker, input=key, retry_policy=policy))


def test_a_retried_activity_publishes_under_the_next_attempt(hub: Hub) -> None:
    hub.start_worker([retrying], [flaky_speaker])
    c = hub.client()
    key = unique_id("flaky")
    instance_id = c.schedule_new_orchestration(retrying, input=key)
    items = list(c.subscribe(instance_id, timeout=60))
    assert [(i.data, i.attempt) for i in items] == [("try 1", 1), ("try 2", 2)]
    assert items[0].task_id == items[1].task_id


@pytest.mark.parametrize(
    "sessions",
    [
        pytest.param(True, id="extended-sessions"),
        pytest.param(
            False,
            id="full-replay",
            marks=pytest.mark.emulator_internals("turns extended sessions off through our worker's own option"),
        ),
    ],
)
def test_orchestrator_items_are_stored_once_with_sessions_on_or_off(hub: Hub, sessions: bool) -> None:
    options = {} if sessions else {"extended_sessions": ExtendedSessionOptions(max_cached_orchestrations=0)}
    hub.start_worker([talker], [speak], **options)
    c = hub.client()
    instance_id = c.schedule_new_orchestration(talker, input=4)
    items = list(c.subscribe(instance_id, timeout=60))
    assert [i.data for i in items if i.topic == "count"] == [0, 1, 2, 3]
    assert len(items) == 9


def counter(ctx: task.OrchestrationContext, n: int) -> Any:
    for i in range(n):
        ctx.publish(i, topic="count")
        yield ctx.create_timer(ctx.current_utc_datetime)
    return n


def test_turns_whose_commit_is_refused_publish_their_items_once(hub: Hub) -> None:
    if hub.server is None:
        pytest.skip("injects faults into the embedded emulator")
    hub.start_worker([counter])
    c = hub.client()
    # The first three completions (all of them the first turn: nothing else runs before it commits) are refused,
    # as if the lease had been lost; the turn runs again each time and publishes again, uncommitted.
    before = hub.server.faults.stats.rejected
    hub.server.faults.reject_next_completions(3)
    try:
        instance_id = c.schedule_new_orchestration(counter, input=4)
        items = list(c.subscribe(instance_id, timeout=60))
        assert hub.server.faults.stats.rejected - before == 3
    finally:
        hub.server.faults.clear()
    assert [i.data for i in items] == [0, 1, 2, 3]


def test_purging_the_instance_removes_its_stream(hub: Hub) -> None:
    c, instance_id = _run(hub, n=1)
    list(c.subscribe(instance_id, timeout=60))
    head = wire.head_entity(instance_id)
    assert c.get_entity(head) is not None
    assert c.purge_orchestration(instance_id).deleted_instance_count == 1
    deadline = time.monotonic() + 30
    while c.get_entity(head) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert c.get_entity(head) is None
    with pytest.raises(StreamNotFoundError):
        list(c.subscribe(instance_id))


def prolific(ctx: task.ActivityContext, count: int) -> int:
    for i in range(count):
        ctx.publish({"i": i, "pad": "x" * 1000})
    return count


def prolific_run(ctx: task.OrchestrationContext, count: int) -> Any:
    return (yield ctx.call_activity(prolific, input=count))


def test_a_long_stream_spans_segments_and_the_cap_drops_the_oldest(hub: Hub) -> None:
    w = hub.worker()
    w.configure_streams(max_bytes_per_instance=400_000)
    w.add_orchestrator(prolific_run)
    w.add_activity(prolific)
    w.start()
    c = hub.client()
    instance_id = c.schedule_new_orchestration(prolific_run, input=1000)  # ~1 MB published
    c.wait_for_orchestration_completion(instance_id, timeout=120)  # a live subscriber might read all before drops
    items = list(c.subscribe(instance_id, timeout=120))
    marker, rest = items[0], items[1:]
    assert marker.topic == DROPPED_TOPIC and marker.data["dropped"] > 0
    first = marker.data["dropped"]
    assert [i.data["i"] for i in rest] == list(range(first, 1000))
    head = c.get_entity(wire.head_entity(instance_id))
    assert head is not None


_KEPT: list[task.ActivityContext] = []


def keeps_its_context(ctx: task.ActivityContext, _: Any) -> None:
    _KEPT.append(ctx)


def oversized_from_activity(ctx: task.ActivityContext, _: Any) -> None:
    ctx.publish("y" * (70 * 1024))


def one_activity(ctx: task.OrchestrationContext, name: str) -> Any:
    return (yield ctx.call_activity(name))


@pytest.mark.adversarial
def test_publishing_outside_a_running_activity_fails_clearly(hub: Hub) -> None:
    with pytest.raises(PublishError, match="does not belong to an activity run by a worker"):
        task.ActivityContext("some-instance", 1).publish("hello")
    hub.start_worker([one_activity], [keeps_its_context])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(one_activity, input="keeps_its_context")
    c.wait_for_orchestration_completion(instance_id, timeout=60)
    with pytest.raises(PublishError, match="the activity has returned"):
        _KEPT[-1].publish("too late")


@pytest.mark.adversarial
def test_an_item_over_64_kib_fails_the_activity_at_publish(hub: Hub) -> None:
    hub.start_worker([one_activity], [oversized_from_activity])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(one_activity, input="oversized_from_activity")
    state = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert state is not None and state.failure_details is not None
    assert "over the limit of 65536 bytes per item" in state.failure_details.message


async def async_speaker(ctx: task.ActivityContext, words: list[str]) -> int:
    for word in words:
        ctx.publish(word, topic="words")
        await asyncio.sleep(0.01)
    return len(words)


def async_run(ctx: task.OrchestrationContext, words: list[str]) -> Any:
    return (yield ctx.call_activity(async_speaker, input=words))


def test_async_activities_publish_too(hub: Hub) -> None:
    hub.start_worker([async_run], [async_speaker])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(async_run, input=["a", "b", "c"])
    items = list(c.subscribe(instance_id, timeout=60))
    assert [(i.topic, i.data, i.attempt) for i in items] == [("words", w, 1) for w in "abc"]


def waits(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.publish("waiting")
    return (yield ctx.wait_for_external_event("go"))


@pytest.mark.adversarial
def test_a_timeout_while_waiting_raises_naming_the_last_cursor(hub: Hub) -> None:
    hub.start_worker([waits])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(waits)
    received: list[Any] = []
    with pytest.raises(TimeoutError, match=f"timed out after 0.5s waiting for items of '{instance_id}'") as caught:
        received.extend(c.subscribe(instance_id, timeout=0.5))
    assert [i.data for i in received] == ["waiting"]
    assert received[0].id in str(caught.value)
    c.terminate_orchestration(instance_id)
