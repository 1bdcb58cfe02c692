"""External events keep their arrival order across continue-as-new, with either SDK as the worker.

The first test makes the interleaving that reordered them happen every time: events arrive while the turn
that continues as new is out (its completion is held until they have), behind the event it carries over.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence

import pytest

from dtscale_emulator.engine.work import ARRIVE, COMPLETE, SEND, Interleaver, T
from dtscale_emulator.ops.clock import ManualClock
from durabletask import client
from tests.support.reliability import wait_until

from . import rig
from .event_order import order_round

EVENTS = 8


class HoldFirstTurn:
    """Plays one interleaving for one instance: requests after the first ``early`` wait until its first work item
    goes out, and that turn's completion waits until ``arrivals`` requests have been applied."""

    def __init__(self, instance_id: str, early: int, arrivals: int) -> None:
        self.instance_id = instance_id
        self.early = early
        self.arrivals = arrivals
        self.arrived = 0
        self.held = 0
        self._sent = asyncio.Event()
        self._open = asyncio.Event()

    async def pause(self, point: str, key: str) -> None:
        if key != self.instance_id:
            return
        if point == SEND:
            self._sent.set()
        elif point == ARRIVE:
            self.arrived += 1
            if self.arrived > self.early:
                await asyncio.wait_for(self._sent.wait(), timeout=30)
            # The request is applied before the held completion runs again: this returns without giving the
            # loop away once the gate is open.
            if self.arrived >= self.arrivals:
                self._open.set()
        elif point == COMPLETE and not self.held:
            self.held += 1
            await asyncio.wait_for(self._open.wait(), timeout=30)

    def choose(self, point: str, key: str, options: Sequence[str]) -> str:
        return options[0]

    def shuffle(self, point: str, items: list[T]) -> list[T]:
        return items

    def committed(self, kind: str, token: str) -> None:
        return None


@pytest.mark.parametrize("sdk", rig.SDKS)
def test_events_that_arrive_during_a_continuing_turn_keep_their_order(sdk: str) -> None:
    instance_id = f"held-{uuid.uuid4().hex[:10]}"
    gate = HoldFirstTurn(instance_id, early=2, arrivals=EVENTS)

    def hold(clock: ManualClock) -> Interleaver:
        return gate

    with rig.open_rig(hold) as r:
        c = r.client
        c.schedule_new_orchestration("collect", input={"n": EVENTS, "seen": [], "save": True}, instance_id=instance_id)
        # Two events before any worker is there: the first turn takes one and carries the other over; the
        # rest arrive while that turn is out.
        c.raise_orchestration_event(instance_id, "e", data=1)
        c.raise_orchestration_event(instance_id, "e", data=2)
        r.start_worker(sdk)
        for value in range(3, EVENTS + 1):
            c.raise_orchestration_event(instance_id, "e", data=value)
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert gate.held == 1 and gate.arrived == EVENTS, "the interleaving did not happen"
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output or "[]") == list(range(1, EVENTS + 1))


@pytest.mark.parametrize("sdk", rig.SDKS)
def test_events_raised_back_to_back_keep_their_order(sdk: str) -> None:
    with rig.open_rig() as r:
        r.start_worker(sdk)
        seen = [order_round(r.client, EVENTS) for _ in range(3)]
    assert seen == [list(range(1, EVENTS + 1))] * 3


@pytest.mark.parametrize("sdk", rig.SDKS)
def test_events_after_a_suspend_in_a_continuing_turn_are_not_lost(sdk: str) -> None:
    # Everything is queued before a worker connects, so the first work item would hold [1, suspend, 2, 3]:
    # both SDKs set 2 and 3 aside while suspended, and forgot them as the turn continued as new on 1.
    instance_id = f"paused-{uuid.uuid4().hex[:10]}"
    with rig.open_rig() as r:
        c = r.client
        c.schedule_new_orchestration("collect", input={"n": 3, "seen": [], "save": True}, instance_id=instance_id)
        c.raise_orchestration_event(instance_id, "e", data=1)
        c.suspend_orchestration(instance_id)
        c.raise_orchestration_event(instance_id, "e", data=2)
        c.raise_orchestration_event(instance_id, "e", data=3)
        r.start_worker(sdk)
        # The new execution inherits the suspend: it is suspended with 2 and 3 set aside, until resumed.
        suspended = client.OrchestrationStatus.SUSPENDED
        wait_until(lambda: _status(c, instance_id) == suspended and _seen(r, instance_id) == [1], 30, "the suspend")
        c.resume_orchestration(instance_id)
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output or "[]") == [1, 2, 3]


@pytest.mark.parametrize("sdk", rig.SDKS)
def test_what_a_turn_schedules_is_recorded_before_a_suspend_that_arrived_with_its_events(sdk: str) -> None:
    # Queued before a worker connects, the start and the suspend would make one work item: the activity the turn
    # schedules was recorded after the suspend, and Microsoft's worker, replaying while suspended, scheduled it
    # again (a second taskScheduled with the same ID, then a non-determinism failure on resume).
    instance_id = f"paused-{uuid.uuid4().hex[:10]}"
    with rig.open_rig() as r:
        c = r.client
        c.schedule_new_orchestration("steps", input=3, instance_id=instance_id)
        c.suspend_orchestration(instance_id)
        r.start_worker(sdk)
        # The activity scheduled on the start completes while the instance is suspended, in a turn of its own.
        wait_until(lambda: _kinds(r, instance_id).count("taskCompleted") == 1, 30, "the first activity's result")
        wait_until(lambda: _kinds(r, instance_id).count("orchestratorStarted") >= 3, 30, "the suspended turn")
        assert _status(c, instance_id) == client.OrchestrationStatus.SUSPENDED
        c.resume_orchestration(instance_id)
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
        _, history, _ = r.record_and_history(instance_id)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output or "null") == sum(2 * n for n in range(3))
    scheduled = [e.eventId for e in history if e.HasField("taskScheduled")]
    assert scheduled == sorted(set(scheduled)) and len(scheduled) == 3, scheduled


def _kinds(r: rig.Rig, instance_id: str) -> list[str]:
    _, history, _ = r.record_and_history(instance_id)
    return [str(e.WhichOneof("eventType")) for e in history]


def _status(c: client.TaskHubGrpcClient, instance_id: str) -> client.OrchestrationStatus | None:
    state = c.get_orchestration_state(instance_id)
    return None if state is None else state.runtime_status


def _seen(r: rig.Rig, instance_id: str) -> list[int]:
    _, history, _ = r.record_and_history(instance_id)
    started = [e.executionStarted.input.value for e in history if e.HasField("executionStarted")]
    return list(json.loads(started[0])["seen"]) if started else []
