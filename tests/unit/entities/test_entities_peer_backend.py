"""Our entity support against Microsoft's in-memory backend (run by the interop peer in a subprocess)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from durabletask import client, task
from durabletask.entities import DurableEntity, EntityInstanceId
from durabletask.worker import TaskHubGrpcWorker
from tests.unit.worker.test_worker_peer_backend import peer_address

pytestmark = pytest.mark.interop
__all__ = ["peer_address"]  # the backend fixture, shared with the worker's peer tests


class Tally(DurableEntity):
    def add(self, amount: int) -> int:
        total = self.get_state(int, 0) + amount
        self.set_state(total)
        return total

    def fail(self) -> None:
        self.set_state(-1)
        raise ValueError("refused")

    def get(self) -> int:
        return self.get_state(int, 0)


def locked_sum(ctx: task.OrchestrationContext, keys: list[str]) -> Any:
    entities = [EntityInstanceId("tally", key) for key in keys]
    with (yield ctx.lock_entities(entities)):
        yield task.when_all([ctx.call_entity(e, "add", 10) for e in entities])
        try:
            yield ctx.call_entity(entities[0], "fail")
        except task.TaskFailedError as error:
            failed = str(error)
        values = yield task.when_all([ctx.call_entity(e, "get") for e in entities])
    ctx.signal_entity(entities[0], "add", 1)
    return {"values": values, "failed": failed}


@pytest.fixture
def parties(peer_address: str) -> Iterator[tuple[client.TaskHubGrpcClient, TaskHubGrpcWorker]]:
    w = TaskHubGrpcWorker(host_address=peer_address)
    w.add_entity(Tally)
    w.add_orchestrator(locked_sum)
    w.start()
    c = client.TaskHubGrpcClient(host_address=peer_address)
    try:
        yield c, w
    finally:
        c.close()
        w.stop()


def test_calls_locks_failures_and_signals_on_the_peer_backend(
        parties: tuple[client.TaskHubGrpcClient, TaskHubGrpcWorker]) -> None:
    c, _ = parties
    keys = [f"k{time.monotonic_ns()}b", f"k{time.monotonic_ns()}a"]
    c.signal_entity(EntityInstanceId("tally", keys[0]), "add", 5)
    instance_id = c.schedule_new_orchestration(locked_sum, input=keys)
    state = c.wait_for_orchestration_completion(instance_id, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    result = state.serialized_output
    assert result is not None
    decoded = json.loads(result)
    assert "Operation 'fail' on entity" in decoded["failed"] and "refused" in decoded["failed"]
    first = 15 if decoded["values"][0] == 15 else 10  # the client's signal may run before or after the lock
    assert decoded["values"] == [first, 10]
    deadline = time.monotonic() + 30
    expected = 16
    while True:
        metadata = c.get_entity(EntityInstanceId("tally", keys[0]))
        if metadata is not None and metadata.get_typed_state(int) == expected:
            break
        assert time.monotonic() < deadline, f"state is {metadata and metadata.get_typed_state()}"
        time.sleep(0.05)
