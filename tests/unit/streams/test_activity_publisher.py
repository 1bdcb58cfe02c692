"""An activity's publisher with stand-ins for the two RPCs: order, batching, resends and the wait at close."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from durabletask._codec import Codec
from durabletask._streams import entity, wire
from durabletask._streams.producer import ActivityPublisher

LOG = logging.getLogger("test.streams")


class Head:
    """Applies signals to a head state, failing the first ``fail`` sends as a broken channel would."""

    def __init__(self, fail: int = 0, readable: bool = True) -> None:
        self.state = entity.new_head_state()
        self.sends: list[dict[str, Any]] = []
        self.fail = fail
        self.readable = readable
        self.lock = threading.Lock()

    def send(self, entity_id: str, encoded: str) -> None:
        assert entity_id == str(wire.head_entity("i"))
        with self.lock:
            if self.fail:
                self.fail -= 1
                raise ConnectionError("channel down")
            batch = json.loads(encoded)
            self.sends.append(batch)
            entity.append(self.state, batch)

    def read(self, entity_id: str) -> dict[str, Any] | None:
        if not self.readable:
            raise ValueError("a payload-store token, not JSON")
        with self.lock:
            return json.loads(json.dumps(self.state))


def _publisher(head: Head) -> ActivityPublisher:
    return ActivityPublisher("i", "e1", 7, Codec(), head.send, head.read, logger=LOG)


def test_items_arrive_in_order_in_few_batches_and_close_waits_until_stored() -> None:
    head = Head()
    publisher = _publisher(head)
    for i in range(500):
        publisher.publish(i, topic="n")
    publisher.close()
    stored = head.state["items"]
    assert [json.loads(item[2]) for item in stored] == list(range(500))
    assert {(item[4], item[5]) for item in stored} == {(7, 1)}
    assert len(head.sends) < 500  # batched
    assert [b["s"] for b in head.sends] == list(range(1, len(head.sends) + 1))


def test_a_failed_send_is_retried_with_the_same_number() -> None:
    head = Head(fail=2)
    publisher = _publisher(head)
    publisher.publish("a")
    publisher.close()
    assert [b["s"] for b in head.sends] == [1]
    assert len(head.state["items"]) == 1


def test_an_unreadable_head_does_not_hold_the_activity() -> None:
    head = Head(readable=False)
    publisher = _publisher(head)
    publisher.publish("a")
    publisher.close()  # returns without the 30 s wait
    assert len(head.state["items"]) == 1


@pytest.mark.adversarial
def test_publishing_after_close_and_bad_values_fail_clearly() -> None:
    publisher = _publisher(Head())
    with pytest.raises(TypeError, match=r"publish: the value on topic 'default' \(object\) cannot be serialized"):
        publisher.publish(object())
    with pytest.raises(ValueError, match="topic: expected a non-empty string"):
        publisher.publish(1, topic="")
    publisher.close()
    with pytest.raises(wire.PublishError, match="the activity has returned"):
        publisher.publish("late")
