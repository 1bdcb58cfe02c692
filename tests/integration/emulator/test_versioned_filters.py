"""Versioned work-item filters: an activity scheduled without a version is matched by its orchestration's version,
and work that no connected worker's filters let through shows in the worker view with no takers."""

from __future__ import annotations

import json
from typing import Any

import grpc

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._protocol_extensions import WORKER_VIEW_METHOD, WORKER_VIEW_SERVICE

from .conftest import HubStub, WorkStream, complete, schedule, start, sv, uid


def _stream(
    stub: HubStub, versions: list[str], orchestrations: bool = True, activities: bool = True, **limits: int
) -> WorkStream:
    filters = pb.WorkItemFilters(
        orchestrations=[pb.OrchestrationFilter(name="Greet", versions=versions)] if orchestrations else [],
        activities=[pb.ActivityFilter(name="greet", versions=versions)] if activities else [],
    )
    return WorkStream(stub, pb.GetWorkItemsRequest(workItemFilters=filters, **limits))  # type: ignore[arg-type]


def _backlog(channel: grpc.Channel, hub: str) -> list[dict[str, Any]]:
    call = channel.unary_unary(f"/{WORKER_VIEW_SERVICE}/{WORKER_VIEW_METHOD}")
    found: list[dict[str, Any]] = json.loads(call(b"", metadata=[("taskhub", hub)], timeout=10))["backlog"]
    return found


def test_an_unversioned_activity_of_a_versioned_orchestration_reaches_the_versioned_worker(stub: HubStub) -> None:
    iid = start(stub, "Greet", version=sv("3.0.0"))
    work = _stream(stub, ["3.0.0"])
    complete(stub, work.next(), schedule(1, "greet", '"Ada"'))  # no version, as the JS and Python SDKs send
    activity = work.next().activityRequest
    assert activity.orchestrationInstance.instanceId == iid and activity.name == "greet"
    assert not activity.HasField("version")  # the worker sees the request as it was scheduled


def test_an_unversioned_activity_is_matched_by_its_orchestrations_version_only(
    stub: HubStub, channel: grpc.Channel
) -> None:
    old = start(stub, "Greet", version=sv("2.0.0"))
    plain = start(stub, "Greet")
    # Orchestrations only: the activities stay queued for the streams below.
    any_version = _stream(stub, [], activities=False)
    complete(stub, any_version.next(), schedule(1, "greet"))
    complete(stub, any_version.next(), schedule(1, "greet"))
    newer = _stream(stub, ["3.0.0"], orchestrations=False)
    assert newer.nothing_for(0.5)  # neither a 2.0.0 orchestration's activity nor an unversioned one's
    backlog = [e for e in _backlog(channel, stub.hub) if e["kind"] == "activity"]
    assert backlog == [
        {"kind": "activity", "name": "greet", "version": "2.0.0", "count": 1, "takers": 0},
        {"kind": "activity", "name": "greet", "version": None, "count": 1, "takers": 0},
    ]
    takes_two = _stream(stub, ["2.0.0"], orchestrations=False)
    assert takes_two.next().activityRequest.orchestrationInstance.instanceId == old
    takes_unversioned = _stream(stub, [""], orchestrations=False)
    assert takes_unversioned.next().activityRequest.orchestrationInstance.instanceId == plain


def test_an_explicit_activity_version_is_matched_as_scheduled(stub: HubStub) -> None:
    start(stub, "Greet", version=sv("3.0.0"))
    work = _stream(stub, ["3.0.0"])
    pinned = pb.OrchestratorAction(id=1, scheduleTask=pb.ScheduleTaskAction(name="greet", version=sv("1.0.0")))
    complete(stub, work.next(), pinned)
    assert work.nothing_for(0.5)
    assert _stream(stub, ["1.0.0"], orchestrations=False).next().activityRequest.version.value == "1.0.0"


def test_the_worker_view_counts_which_connected_workers_take_each_pending_item(
    stub: HubStub, channel: grpc.Channel
) -> None:
    start(stub, "Greet", version=sv("3.0.0"))
    start(stub, "Greet", version=sv("3.0.0"))
    start(stub, "Unserved")
    entity = f"@tally@{uid()}"
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="add", requestId=uid("r")))
    assert _backlog(channel, stub.hub) == [
        {"kind": "entity", "name": "tally", "version": None, "count": 1, "takers": 0},
        {"kind": "orchestration", "name": "Greet", "version": "3.0.0", "count": 2, "takers": 0},
        {"kind": "orchestration", "name": "Unserved", "version": None, "count": 1, "takers": 0},
    ]
    # A worker that takes one 3.0.0 Greet at a time, and nothing else: the second Greet waits for it, while
    # nothing connected will ever take Unserved or the entity's operations.
    busy = _stream(stub, ["3.0.0"], activities=False, maxConcurrentOrchestrationWorkItems=1)
    busy.next()
    assert _backlog(channel, stub.hub) == [
        {"kind": "entity", "name": "tally", "version": None, "count": 1, "takers": 0},
        {"kind": "orchestration", "name": "Greet", "version": "3.0.0", "count": 1, "takers": 1},
        {"kind": "orchestration", "name": "Unserved", "version": None, "count": 1, "takers": 0},
    ]
