"""Streams of instances whose IDs are too long to be their entities' keys (entity IDs are capped at 100 characters).

An instance ID may have 100 characters; its stream's segment entity ``@dtscale.streamsegment@<n>|<key>`` must fit
100 too, so IDs over 64 characters get a shortened key. Such streams work like any other: sealed segments, order,
resuming, purging.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from durabletask import client, task
from durabletask._streams import wire

from .conftest import Hub, unique_id

WAIT = 60
FILLER = "z" * 2000


def chatty(ctx: task.OrchestrationContext, count: int) -> Any:
    ctx.publish("begin", topic="status")
    written = yield ctx.call_activity(write, input=count)
    ctx.publish("end", topic="status")
    return written


def write(ctx: task.ActivityContext, count: int) -> int:
    for i in range(count):
        ctx.publish({"i": i, "pad": FILLER}, topic="rows")
    return count


def _long_id(length: int) -> str:
    base = unique_id("long-stream-")
    return (base + "-" + "q" * length)[:length]


@pytest.mark.parametrize("length", [64, 65, 100])
def test_a_long_instance_id_streams_seals_resumes_and_purges(hub: Hub, length: int) -> None:
    hub.start_worker([chatty], [write])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(chatty, input=80, instance_id=_long_id(length))
    assert len(instance_id) == length
    state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state

    items = list(c.subscribe(instance_id, timeout=WAIT))
    assert [item.data for item in items if item.topic == "status"] == ["begin", "end"]
    assert [item.data["i"] for item in items if item.topic == "rows"] == list(range(80))
    head = c.get_entity(wire.head_entity(instance_id), include_state=True)
    assert head is not None and len(str(wire.segment_entity(instance_id, 10**9))) <= 100
    assert json.loads(head.get_state())["segs"], "160 KB of items should have sealed segments"

    resumed = list(c.subscribe(instance_id, after=items[40].id, timeout=WAIT))
    assert [item.id for item in resumed] == [item.id for item in items[41:]]

    segments = [number for number, *_ in json.loads(head.get_state())["segs"]]
    assert c.purge_orchestration(instance_id).deleted_instance_count == 1
    # The purge signals the head, which removes itself and its segments: wait until they are gone.
    left = [wire.head_entity(instance_id), *(wire.segment_entity(instance_id, n) for n in segments)]
    deadline = time.monotonic() + WAIT
    while left and time.monotonic() < deadline:
        left = [entity for entity in left if c.get_entity(entity) is not None]
        time.sleep(0.05)
    assert left == []


def test_long_ids_get_distinct_keys_within_the_entity_id_limit() -> None:
    one, two = "a" * 100, "a" * 99 + "b"
    assert wire.stream_key(one) != wire.stream_key(two)
    assert wire.stream_key("a" * 64) == "a" * 64
    for instance_id in (one, two, "ü" * 100):
        assert len(str(wire.segment_entity(instance_id, 9_999_999_999))) <= 100
        assert len(wire.stream_key(instance_id)) == wire.PLAIN_KEY_CHARS + 1
