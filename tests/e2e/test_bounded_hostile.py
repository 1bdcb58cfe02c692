"""Hostile input against bounded activities: forged control events and signals to the control entity.

Any client of the task hub can raise the control event at an orchestration or signal the control entity. Such
input must change nothing it has no business changing: the orchestration keeps running, its calls keep their
deadlines, and a real cancellation still reaches the activity.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task
from durabletask._replay import activity_control as control
from durabletask.entities import EntityInstanceId

from .conftest import Hub, unique_id

pytestmark = pytest.mark.adversarial

WAIT = 60
_started: dict[str, threading.Event] = {}
_stopped: dict[str, threading.Event] = {}
_resumed: dict[str, Any] = {}


def _event(table: dict[str, threading.Event], instance_id: str) -> threading.Event:
    return table.setdefault(instance_id, threading.Event())


def pages(ctx: task.ActivityContext, _: Any) -> str:
    """Heartbeats once, then polls until asked to stop; a later attempt records the details it was given."""
    if ctx.heartbeat_details is not None:
        _resumed[ctx.orchestration_id] = ctx.heartbeat_details
        return "resumed"
    ctx.heartbeat(0)
    _event(_started, ctx.orchestration_id).set()
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if ctx.is_cancellation_requested:
            _event(_stopped, ctx.orchestration_id).set()
            raise task.ActivityCancelledError("noticed by polling")
        time.sleep(0.05)
    return "never asked to stop"


def cancellable(ctx: task.OrchestrationContext, _: Any) -> Any:
    t = ctx.call_activity(pages, heartbeat_timeout=timedelta(seconds=20))
    winner = yield task.when_any([t, ctx.wait_for_external_event("cancel")])
    if winner is not t:
        t.cancel()
    try:
        return (yield t)
    except task.TaskCancelledError:
        return "cancelled"


def timed(ctx: task.OrchestrationContext, _: Any) -> Any:
    retry = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=100), max_number_of_attempts=2)
    return (yield ctx.call_activity(pages, start_to_close_timeout=timedelta(seconds=2), retry_policy=retry))


def _raw_event(c: client.TaskHubGrpcClient, instance_id: str, raw: str) -> None:
    """Raise the control event with exactly ``raw`` as its payload, as another SDK or a hand-made call could."""
    c.raise_orchestration_event(instance_id, control.CONTROL_EVENT, data=json.loads(raw) if raw[:1] in "{[" else raw)


FORGED = [
    "not json at all",
    "[1, 2, 3]",
    '{"task": 1e400, "kind": "beat"}',
    '{"task": -1e400, "kind": "start"}',
    '{"task": 99999999999999999999999999, "kind": "start"}',
    '{"task": "NaN", "kind": "beat"}',
    '{"task": 1, "kind": "explode"}',
    '{"task": 1, "kind": "beat", "details": {"not": "a string"}}',
    '{"kind": "beat"}',
]


def _start(hub: Hub, orchestrator: Any) -> tuple[client.TaskHubGrpcClient, str]:
    hub.start_worker([orchestrator], [pages])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(orchestrator, instance_id=unique_id("hostile"))
    assert _event(_started, instance_id).wait(WAIT), "the activity never started"
    return c, instance_id


def _completed(c: client.TaskHubGrpcClient, instance_id: str) -> Any:
    state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    assert state is not None
    assert state.runtime_status == client.OrchestrationStatus.COMPLETED, state.failure_details
    return json.loads(state.serialized_output) if state.serialized_output else None


def test_malformed_control_events_are_ignored_and_cancellation_still_works(hub: Hub) -> None:
    c, instance_id = _start(hub, cancellable)
    for raw in FORGED:
        _raw_event(c, instance_id, raw)
    c.raise_orchestration_event(instance_id, "cancel")
    assert _completed(c, instance_id) == "cancelled"
    assert _event(_stopped, instance_id).wait(WAIT)


def test_garbage_signals_to_the_control_entity_leave_real_cancellations_working(hub: Hub) -> None:
    c, instance_id = _start(hub, cancellable)
    state = c.get_orchestration_state(instance_id)
    assert state is not None
    # The entity of the execution this orchestration runs in; garbage of every kind goes to it first.
    entity = EntityInstanceId(control.CONTROL_ENTITY, control.entity_key(instance_id, _execution_id(c, instance_id)))
    for operation, value in [("cancel", "abc"), ("cancel", None), ("cancel", [1, 2]), ("drop", 1), ("cancel", 1e400)]:
        c.signal_entity(entity, operation, input=value)
    c.raise_orchestration_event(instance_id, "cancel")
    assert _completed(c, instance_id) == "cancelled"
    assert _event(_stopped, instance_id).wait(WAIT)


def test_forged_heartbeat_details_over_the_limit_do_not_reach_the_retry(hub: Hub) -> None:
    c, instance_id = _start(hub, timed)
    _wait_for_a_heartbeat(c, instance_id)
    huge = json.dumps("x" * control.MAX_HEARTBEAT_DETAILS_BYTES)  # valid details, 2 bytes over the limit
    c.raise_orchestration_event(instance_id, control.CONTROL_EVENT, data={"task": 1, "kind": "beat", "details": huge})
    assert _completed(c, instance_id) == "resumed"
    assert _resumed[instance_id] == 0  # the real heartbeat's details, not the forged ones


def _wait_for_a_heartbeat(c: client.TaskHubGrpcClient, instance_id: str) -> None:
    """Until the attempt's own heartbeat is in the history, so that a forged one comes after it."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for event in c.get_orchestration_history(instance_id):
            raw = getattr(event, "input", "") or ""
            if getattr(event, "name", None) == control.CONTROL_EVENT and '"beat"' in raw:
                return
        time.sleep(0.05)
    raise AssertionError("the attempt's heartbeat never reached the history")


def _execution_id(c: client.TaskHubGrpcClient, instance_id: str) -> str:
    history = c.get_orchestration_history(instance_id)
    for event in history:
        instance = getattr(event, "orchestration_instance", None)
        if instance is not None and instance.execution_id:
            return str(instance.execution_id)
    return ""
