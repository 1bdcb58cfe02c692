"""An entity runs each sender's operations in the order they were sent, across that sender's critical section.

Played against the entity layer directly: an orchestration signals an entity and then locks it (the signal
is still queued when the lock is granted), then calls it inside the critical section.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from dtscale_emulator.engine import entity_ops
from dtscale_emulator.engine.entities import Entities
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.protocol import StringValue, pb
from dtscale_emulator.storage import NameFilter, SqliteBackend

HUB = "h"
ENTITY = "@journal@k"


@pytest.fixture
def entities() -> Iterator[Entities]:
    backend = SqliteBackend(None)
    yield Entities(backend, ManualClock())
    backend.close()


def _send(entities: Entities, sender: str, message: pb.SendEntityMessageAction) -> None:
    with entities.backend.transaction() as tx:
        entity_ops.from_orchestration(tx, HUB, sender, message, entities.clock.now())


def _signal(seq: int) -> pb.SendEntityMessageAction:
    signaled = pb.EntityOperationSignaledEvent(requestId=f"s{seq}", operation="add", input=StringValue(value=str(seq)))
    signaled.targetInstanceId.value = ENTITY
    return pb.SendEntityMessageAction(entityOperationSignaled=signaled)


def _call(sender: str, seq: int) -> pb.SendEntityMessageAction:
    called = pb.EntityOperationCalledEvent(requestId=f"c{seq}", operation="add", input=StringValue(value=str(seq)))
    called.targetInstanceId.value = ENTITY
    called.parentInstanceId.value = sender
    return pb.SendEntityMessageAction(entityOperationCalled=called)


def _lock(sender: str) -> pb.SendEntityMessageAction:
    requested = pb.EntityLockRequestedEvent(criticalSectionId="cs1", lockSet=[ENTITY])
    requested.parentInstanceId.value = sender
    return pb.SendEntityMessageAction(entityLockRequested=requested)


def _batch(entities: Entities) -> list[str]:
    work = entities.fetch(HUB, NameFilter(), "t1", entities.clock.now() + timedelta(seconds=30))
    assert work is not None, "the entity has operations it may run"
    return [_input(op) for op in work.operations]


def _input(operation: pb.HistoryEvent) -> str:
    if operation.HasField("entityOperationSignaled"):
        return operation.entityOperationSignaled.input.value
    return operation.entityOperationCalled.input.value


def test_a_signal_sent_before_a_lock_runs_before_the_critical_sections_calls(entities: Entities) -> None:
    _send(entities, "orch", _signal(1))
    _send(entities, "orch", _lock("orch"))  # granted at once: the entity is free, the signal still queued
    _send(entities, "orch", _call("orch", 2))
    assert _batch(entities) == ["1", "2"]


def test_while_locked_other_senders_wait(entities: Entities) -> None:
    _send(entities, "orch", _lock("orch"))
    entities.signal(HUB, ENTITY, "add", "9", "client-1", None)  # from a client: waits for the unlock
    _send(entities, "other", _signal(8))  # from another orchestration: waits too
    _send(entities, "orch", _signal(1))
    _send(entities, "orch", _call("orch", 2))
    assert _batch(entities) == ["1", "2"]
