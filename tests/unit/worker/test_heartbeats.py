"""The activity's side of heartbeats: details checked at once, sends throttled and coalesced, the stop raised."""

from __future__ import annotations

import json
from typing import Any

import pytest

from durabletask import task
from durabletask._codec import Codec
from durabletask._errors import PayloadTooLargeError, SerializationError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.activity_control import CONTROL_TAG, AttemptSettings
from durabletask._worker.heartbeats import AttemptHeartbeats, control_entity


def attempt(details: str | None = None, *, bounded: bool = True, throttle: float = 8.0) -> AttemptHeartbeats:
    request = pb.ActivityRequest(name="extract", taskId=3,
                                 orchestrationInstance=pb.OrchestrationInstance(instanceId="abc"))
    if bounded:
        settings = AttemptSettings(attempt=2, entity_key="abc", throttle_seconds=throttle, poll_seconds=1.0,
                                   reports_start=True, details=details)
        request.tags[CONTROL_TAG] = settings.to_tag()
    return AttemptHeartbeats(request, Codec())


def test_the_previous_attempts_details_are_decoded_for_the_activity() -> None:
    assert attempt('{"page": 4}').details == {"page": 4}
    assert attempt().details is None
    assert attempt(bounded=False).details is None


def test_a_million_heartbeats_between_two_sends_cost_one_send_with_the_latest_details() -> None:
    beats = attempt(throttle=8.0)
    now = 1000.0
    beats._next_send = now
    for page in range(1_000_000):
        beats.beat(page)
    assert beats.take_due(now)[:2] == (True, "999999")
    for page in range(1_000_000, 1_000_010):
        beats.beat(page)
    assert beats.take_due(now + 7.9)[0] is False  # within 0.8 x the heartbeat timeout: nothing is sent
    assert beats.take_due(now + 8.0)[:2] == (True, "1000009")  # the details coalesced into one send
    assert beats.take_due(now + 100.0)[0] is False  # nothing new to send


def test_heartbeat_raises_once_the_activity_was_asked_to_stop() -> None:
    beats = attempt()
    ctx = task.ActivityContext("abc", 3, heartbeats=beats)
    ctx.heartbeat(1)
    assert not ctx.is_cancellation_requested
    beats.cancel()
    assert ctx.is_cancellation_requested
    with pytest.raises(task.ActivityCancelledError, match="asked to stop"):
        ctx.heartbeat(2)


@pytest.mark.adversarial
@pytest.mark.parametrize("bounded", [True, False])
def test_details_that_do_not_serialize_are_refused_where_heartbeat_is_called(bounded: bool) -> None:
    ctx = task.ActivityContext("abc", 3, heartbeats=attempt(bounded=bounded))
    with pytest.raises(SerializationError, match="heartbeat details cannot be serialized"):
        ctx.heartbeat(object())


@pytest.mark.adversarial
@pytest.mark.parametrize("bounded", [True, False])
def test_details_over_64_kib_are_refused_naming_the_limit(bounded: bool) -> None:
    ctx = task.ActivityContext("abc", 3, heartbeats=attempt(bounded=bounded))
    ctx.heartbeat("x" * (64 * 1024 - 2))  # exactly 64 KiB as JSON text, quotes included
    with pytest.raises(PayloadTooLargeError, match=r"heartbeat details of instance 'abc' is 65537 bytes.*65536"):
        ctx.heartbeat("x" * (64 * 1024 - 1))


class _EntityContext:
    def __init__(self, operation: str, state: Any, value: Any) -> None:
        self.operation, self.state, self.value = operation, state, value

    def get_state(self, _: Any = None, default: Any = None) -> Any:
        return self.state if self.state is not None else default

    def get_input(self) -> Any:
        return self.value

    def set_state(self, state: Any) -> None:
        self.state = state


def test_the_control_entity_keeps_each_stopped_task_once() -> None:
    ctx = _EntityContext("cancel", None, 5)
    control_entity(ctx, 5)
    ctx.value = 2
    control_entity(ctx, 2)
    control_entity(ctx, 5)
    assert json.dumps(ctx.state) == '{"cancelled": [2, 5]}'
    with pytest.raises(ValueError, match="no operation 'reset'"):
        control_entity(_EntityContext("reset", None, None), None)


def test_the_control_entity_records_that_its_execution_ended_beside_the_stopped_tasks() -> None:
    ctx = _EntityContext("cancel", None, 4)
    control_entity(ctx, 4)
    ctx.operation, ctx.value = "end", None
    control_entity(ctx, None)
    assert ctx.state == {"cancelled": [4], "ended": True}


class _Backend:
    """The reads a look makes, answered from a list of control entities; the requests are kept."""

    def __init__(self) -> None:
        self.entities: list[Any] = []
        self.queries: list[Any] = []
        self.listings: list[Any] = []
        self.updated = "2026-12-06T10:00:00Z"

    def QueryEntities(self, request: Any, timeout: float) -> Any:
        self.queries.append(request.query)
        return pb.QueryEntitiesResponse(entities=self.entities)

    def ListInstanceIds(self, request: Any, timeout: float) -> Any:
        self.listings.append(request)
        return pb.ListInstanceIdsResponse()

    def GetEntity(self, request: Any, timeout: float) -> Any:
        return pb.GetEntityResponse(exists=False)

    def GetInstance(self, request: Any, timeout: float) -> Any:
        state = pb.OrchestrationState(instanceId=request.instanceId,
                                      orchestrationStatus=pb.ORCHESTRATION_STATUS_RUNNING)
        state.lastUpdatedTimestamp.FromJsonString(self.updated)
        return pb.GetInstanceResponse(exists=True, orchestrationState=state)


def _entity(key: str, state: dict[str, Any], modified: str) -> Any:
    found = pb.EntityMetadata(instanceId=f"@dtscale.activities@{key}")
    found.serializedState.value = json.dumps(state)
    found.lastModifiedTime.FromJsonString(modified)
    return found


def test_a_look_reads_the_changes_since_the_backends_last_known_time_less_the_margin_and_stops_the_attempts() -> None:
    import logging
    from datetime import datetime

    from durabletask._worker.attempt_checks import StopChecks

    backend, checks = _Backend(), StopChecks(logging.getLogger("test"))
    first, second = attempt(), attempt()
    second.task_id = 4
    checks.check_one(backend, first)  # at the start: the backend's time is that of the orchestration's last update
    checks.look(backend, [first, second], now=0.0)
    assert backend.queries[-1].instanceIdStartsWith.value == "@dtscale.activities@"
    assert backend.queries[-1].lastModifiedFrom.ToDatetime() == datetime(2026, 12, 6, 9, 59, 55)  # 5 s margin
    assert backend.listings[-1].completedTimeFrom.ToDatetime() == datetime(2026, 12, 6, 9, 59, 55)
    assert list(backend.listings[-1].runtimeStatus) == [pb.ORCHESTRATION_STATUS_TERMINATED]
    backend.entities = [_entity("abc", {"cancelled": [4]}, "2026-12-06T10:00:30Z"),
                        _entity("other", {"ended": True}, "2026-12-06T10:00:20Z")]
    checks.look(backend, [first, second], now=1.0)
    assert (first.cancelled, second.cancelled) == (False, True)  # task 4 of this execution; another's end
    backend.entities = [_entity("abc", {"cancelled": [4], "ended": True}, "2026-12-06T10:00:31Z")]
    checks.look(backend, [first], now=2.0)
    # From the newest change the previous look read (a backend time, whatever the worker's clock says).
    assert backend.queries[-1].lastModifiedFrom.ToDatetime() == datetime(2026, 12, 6, 10, 0, 25)
    assert first.cancelled
