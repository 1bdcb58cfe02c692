"""A worker stopped while an activity waits for its stream items to be stored stops without waiting that out."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from durabletask import client, task
from durabletask._streams import producer

from .conftest import Hub, unique_id

_RETURNED: dict[str, threading.Event] = {}


def chatter(ctx: task.ActivityContext, key: str) -> str:
    for token in ("a", "b", "c"):
        ctx.publish(token, topic="tokens")
    _RETURNED[key].set()
    return "said"


def conversation(ctx: task.OrchestrationContext, key: str) -> Any:
    return (yield ctx.call_activity(chatter, input=key))


def test_stop_delivers_the_result_of_an_activity_whose_items_no_worker_has_stored(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Far past the stop's grace period: only the stop itself can end the activity's wait in time.
    monkeypatch.setattr(producer, "STORE_TIMEOUT", 3600.0)
    key = unique_id("key")
    _RETURNED[key] = threading.Event()
    # Filters generated from what is registered leave the stream entities out: nobody stores the items yet.
    first = hub.worker()
    first.add_orchestrator(conversation)
    first.add_activity(chatter)
    first.use_work_item_filters()
    first.start()
    c = hub.client()
    instance_id = c.schedule_new_orchestration(conversation, input=key, instance_id=unique_id("stop"))
    assert _RETURNED[key].wait(60)
    first.stop()  # before the fix: the default 30 s grace ran out, the activity was abandoned, its result dropped
    hub.start_worker([conversation], [chatter])
    state = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert state.serialized_output == '"said"'
    assert [item.data for item in c.subscribe(instance_id, timeout=60)] == ["a", "b", "c"]
