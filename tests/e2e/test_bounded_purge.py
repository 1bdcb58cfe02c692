"""A purged instance's activity control entities go with it, so a long-running hub does not keep them for ever.

Control entities exist once an execution cancelled an attempt (``cancel``) or ended with attempts running
(``end``). Purging by ID, by filter and recursively removes them; an instance still present keeps its own, also
when its ID shares the readable prefix of a long key with purged ones, and its running attempt sees its cancel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task
from durabletask._client import control_purge
from durabletask._replay import activity_control as control

from .conftest import Hub, unique_id

WAIT = 60  # a hang guard on each wait, never a measure of speed
PREFIX = f"@{control.CONTROL_ENTITY}@"
COMPLETED = client.OrchestrationStatus.COMPLETED
_stopped: dict[str, threading.Event] = {}
_released = threading.Event()  # set as a test ends: an attempt nothing cancels returns then, not at WAIT


def _stop_event(instance_id: str) -> threading.Event:
    return _stopped.setdefault(instance_id, threading.Event())


def beating(ctx: task.ActivityContext, _: Any) -> int:
    deadline = time.monotonic() + WAIT
    page = 0
    try:
        while time.monotonic() < deadline and not _released.is_set():
            ctx.heartbeat(page)
            page += 1
            _released.wait(0.05)
    except task.ActivityCancelledError:
        _stop_event(ctx.orchestration_id).set()
        raise
    return page


def cancels_one(ctx: task.OrchestrationContext, _: Any) -> Any:
    """Cancels its attempt on "cancel" (a ``cancel`` signal), then waits for "done" with nothing running."""
    t = ctx.call_activity(beating, heartbeat_timeout=timedelta(seconds=10))
    yield ctx.wait_for_external_event("cancel")
    t.cancel()
    yield ctx.wait_for_external_event("done")
    return "cancelled"


def ends_running(ctx: task.OrchestrationContext, generation: int) -> Any:
    """Continues as new while its attempt runs (an ``end`` signal to the first execution's entity)."""
    if generation == 0:
        ctx.call_activity(beating, heartbeat_timeout=timedelta(seconds=10))
        yield ctx.wait_for_external_event("renew")
        ctx.continue_as_new(1)
        return None
    return "renewed"


def parent(ctx: task.OrchestrationContext, child_id: str) -> Any:
    return (yield ctx.call_sub_orchestrator(cancels_one, instance_id=child_id))


def _controls(c: client.TaskHubGrpcClient) -> set[str]:
    query = client.EntityQuery(instance_id_starts_with=PREFIX, include_state=False, include_transient=True)
    return {str(e.id) for e in c.get_all_entities(query)}


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _started(c: client.TaskHubGrpcClient, orchestrator: Any, instance_id: str, value: Any = None) -> str:
    c.schedule_new_orchestration(orchestrator, input=value, instance_id=instance_id)
    c.wait_for_orchestration_start(instance_id, timeout=WAIT)
    return instance_id


def _cancelled(c: client.TaskHubGrpcClient, instance_id: str, *, finish: bool = True) -> None:
    """Raise "cancel" once the attempt runs; wait for the attempt to stop (and, with ``finish``, the instance)."""
    _until(lambda: _heartbeating(c, instance_id), f"{instance_id}'s attempt never started")
    c.raise_orchestration_event(instance_id, "cancel")
    assert _stop_event(instance_id).wait(WAIT), f"{instance_id}'s attempt never saw its cancel"
    if finish:
        c.raise_orchestration_event(instance_id, "done")
        state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
        assert state is not None and state.runtime_status == COMPLETED, state


def _heartbeating(c: client.TaskHubGrpcClient, instance_id: str) -> bool:
    history = c.get_orchestration_history(instance_id)
    return any(getattr(e, "name", None) == control.CONTROL_EVENT for e in history)


@pytest.fixture
def c(hub: Hub) -> Iterator[client.TaskHubGrpcClient]:
    _released.clear()
    hub.start_worker([cancels_one, ends_running, parent], [beating])
    yield hub.client()
    _released.set()  # before the worker stops, which waits for its running attempts


@pytest.mark.parametrize("listing", [False, True], ids=["by-prefix", "one-listing"])
def test_purging_by_id_and_by_filter_removes_the_control_entities(
    c: client.TaskHubGrpcClient, listing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if listing:  # as a purge of many instances does: every control entity listed once
        monkeypatch.setattr(control_purge, "ONE_BY_ONE", 0)
    before = _controls(c)
    short = [_started(c, cancels_one, unique_id("ctl")) for _ in range(2)]
    long_id = _started(c, cancels_one, unique_id("ctl-" + "x" * 60))  # a key too long: prefix, "~", digest
    for instance_id in (*short, long_id):
        _cancelled(c, instance_id)
    renewed = _started(c, ends_running, unique_id("renew"), 0)
    _until(lambda: _heartbeating(c, renewed), "the renewing attempt never started")
    c.raise_orchestration_event(renewed, "renew")
    assert c.wait_for_orchestration_completion(renewed, timeout=WAIT) is not None
    _until(lambda: len(_controls(c) - before) == 4, f"expected 4 control entities, got {_controls(c) - before}")

    made = _controls(c) - before
    assert c.purge_orchestration(short[0]).deleted_instance_count == 1
    _until(lambda: len(_controls(c) - before) == 3, f"the purged instance's entity stayed: {_controls(c) - before}")
    assert not any(short[0] in e for e in _controls(c))
    assert c.purge_orchestrations_by(runtime_status=[COMPLETED]).deleted_instance_count == 3
    _until(lambda: _controls(c) == before, f"control entities left after the purge: {_controls(c) - before}")
    assert len(made) == 4


def test_a_recursive_purge_removes_the_sub_orchestrations_control_entities(c: client.TaskHubGrpcClient) -> None:
    before = _controls(c)
    child = unique_id("child")
    top = _started(c, parent, unique_id("parent"), child)
    c.wait_for_orchestration_start(child, timeout=WAIT)
    _cancelled(c, child)
    assert c.wait_for_orchestration_completion(top, timeout=WAIT) is not None
    _until(lambda: len(_controls(c) - before) == 1, "the child's control entity never appeared")
    assert c.purge_orchestration(top, recursive=True).deleted_instance_count == 2
    _until(lambda: _controls(c) == before, f"control entities left after the purge: {_controls(c) - before}")


def test_a_live_instance_keeps_its_entity_and_its_attempt_sees_its_cancel(c: client.TaskHubGrpcClient) -> None:
    before = _controls(c)
    base = unique_id("shared-" + "y" * 50)  # over the readable part of a long key: the IDs below share it
    done = _started(c, cancels_one, f"{base}-done")
    _cancelled(c, done)
    sentinel = _started(c, cancels_one, unique_id("sentinel"))
    _cancelled(c, sentinel)
    live = _started(c, cancels_one, f"{base}-live")
    _cancelled(c, live, finish=False)  # cancelled; the instance goes on waiting
    _until(lambda: len(_controls(c) - before) == 3, "the control entities never appeared")

    assert c.purge_orchestrations_by(runtime_status=[COMPLETED]).deleted_instance_count == 2
    _until(lambda: not any(sentinel in e for e in _controls(c)), "the sentinel's control entity stayed")
    # The purged instance's long key shares its readable prefix with the live one's: neither can be told apart,
    # so both stay while an instance that may own them is present.
    assert len(_controls(c) - before) == 2
    c.raise_orchestration_event(live, "done")
    assert c.wait_for_orchestration_completion(live, timeout=WAIT) is not None
    assert c.purge_orchestration(live).deleted_instance_count == 1
    _until(lambda: _controls(c) == before, f"control entities left after the purge: {_controls(c) - before}")
