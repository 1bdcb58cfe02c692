"""Leases, completion tokens, redelivery, routing filters, concurrency limits and health pings."""

from __future__ import annotations

import time

import grpc
import pytest

from dtscale_emulator.engine.delivery import StartOptions, insert_instance
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, finish, schedule, start, status_of, sv


def _filters(
    orchestrations: dict[str, list[str]] | None = None, activities: list[str] | None = None
) -> pb.GetWorkItemsRequest:
    return pb.GetWorkItemsRequest(
        workItemFilters=pb.WorkItemFilters(
            orchestrations=[pb.OrchestrationFilter(name=n, versions=v) for n, v in (orchestrations or {}).items()],
            activities=[pb.ActivityFilter(name=n) for n in activities or []],
        )
    )


def test_completing_twice_is_rejected_and_applies_nothing(stub: HubStub) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    item = work.next()
    complete(stub, item, schedule(1, "A"))
    with pytest.raises(grpc.RpcError) as err:
        complete(stub, item, finish(2, "x"))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "no longer valid" in (err.value.details() or "")
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_RUNNING


def test_unknown_tokens_are_rejected_for_every_completion_kind(stub: HubStub) -> None:
    calls = [
        lambda: stub.CompleteActivityTask(pb.ActivityResponse(instanceId="x", taskId=1, completionToken="bogus")),
        lambda: stub.CompleteOrchestratorTask(pb.OrchestratorResponse(instanceId="x", completionToken="bogus")),
        lambda: stub.AbandonTaskActivityWorkItem(pb.AbandonActivityTaskRequest(completionToken="bogus")),
        lambda: stub.AbandonTaskOrchestratorWorkItem(pb.AbandonOrchestrationTaskRequest(completionToken="bogus")),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as err:
            call()
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_work_is_redelivered_when_its_stream_dies(stub: HubStub) -> None:
    iid = start(stub)
    first = WorkStream(stub)
    item = first.next()
    first.cancel()
    second = WorkStream(stub)
    again = second.next()
    assert again.orchestratorRequest.instanceId == iid
    assert again.completionToken != item.completionToken
    with pytest.raises(grpc.RpcError) as err:
        complete(stub, item, finish(1))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    complete(stub, again, finish(1, "ok"))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED


def test_activity_is_redelivered_after_abandon_and_completes_once(stub: HubStub) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "A"))
    act = work.next()
    stub.AbandonTaskActivityWorkItem(pb.AbandonActivityTaskRequest(completionToken=act.completionToken))
    again = work.next()
    assert again.activityRequest.taskId == 1 and again.completionToken != act.completionToken
    stub.CompleteActivityTask(
        pb.ActivityResponse(instanceId=iid, taskId=1, result=sv("1"), completionToken=again.completionToken)
    )
    with pytest.raises(grpc.RpcError):
        stub.CompleteActivityTask(
            pb.ActivityResponse(instanceId=iid, taskId=1, result=sv("2"), completionToken=again.completionToken)
        )
    new = work.next().orchestratorRequest.newEvents
    assert [e.taskCompleted.result.value for e in new if e.HasField("taskCompleted")] == ["1"]


def test_lease_timeout_redelivers_to_another_stream(stub: HubStub, clock: ManualClock) -> None:
    iid = start(stub)
    holder = WorkStream(stub, pb.GetWorkItemsRequest(maxConcurrentOrchestrationWorkItems=1))
    item = holder.next()
    other = WorkStream(stub)
    assert other.nothing_for(0.3)
    clock.advance(31)  # the fixture's lease timeout is 30 s
    again = other.next()
    assert again.orchestratorRequest.instanceId == iid
    with pytest.raises(grpc.RpcError):
        complete(stub, item, finish(1))


def test_filtered_streams_only_get_matching_orchestrations(stub: HubStub) -> None:
    iid = start(stub, "Wanted")
    other = WorkStream(stub, _filters({"Other": []}))
    assert other.nothing_for(0.3)
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_PENDING
    wanted = WorkStream(stub, _filters({"Wanted": []}))
    assert wanted.next().orchestratorRequest.instanceId == iid


def test_version_filters_match_exact_versions(stub: HubStub) -> None:
    iid = start(stub, "V", version=sv("2.0"))
    wrong = WorkStream(stub, _filters({"V": ["1.0"]}))
    assert wrong.nothing_for(0.3)
    right = WorkStream(stub, _filters({"V": ["1.0", "2.0"]}))
    assert right.next().orchestratorRequest.instanceId == iid


def test_activity_filters_route_activities(stub: HubStub) -> None:
    start(stub, "O")
    orchestrations_only = WorkStream(stub, _filters({"O": []}))
    complete(stub, orchestrations_only.next(), schedule(1, "Act"))
    assert orchestrations_only.nothing_for(0.3)
    activities = WorkStream(stub, _filters(activities=["Act"]))
    assert activities.next().activityRequest.name == "Act"


def test_max_concurrent_orchestrations_is_honoured(stub: HubStub) -> None:
    a, b = start(stub), start(stub)
    work = WorkStream(stub, pb.GetWorkItemsRequest(maxConcurrentOrchestrationWorkItems=1))
    first = work.next()
    assert work.nothing_for(0.3)
    complete(stub, first, finish(1))
    second = work.next()
    assert {first.orchestratorRequest.instanceId, second.orchestratorRequest.instanceId} == {a, b}


def test_one_work_item_per_instance_and_events_wait_for_the_next(stub: HubStub) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    item = work.next()
    stub.RaiseEvent(pb.RaiseEventRequest(instanceId=iid, name="e", input=sv("1")))
    assert work.nothing_for(0.3)
    complete(stub, item)
    new = work.next().orchestratorRequest.newEvents
    assert [e.eventRaised.name for e in new if e.HasField("eventRaised")] == ["e"]


def test_idle_streams_receive_health_pings(stub: HubStub) -> None:
    work = WorkStream(stub, skip_pings=False)
    assert work.next(timeout=3).HasField("healthPing")


def test_a_backlog_of_one_kind_does_not_starve_another(stub: HubStub) -> None:
    start(stub)
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "A"))
    for _ in range(5):
        start(stub)
    kinds_seen = [work.next().WhichOneof("request") for _ in range(3)]
    assert "activityRequest" in kinds_seen, kinds_seen


def test_a_version_filtered_stream_gets_its_work_behind_10000_older_versions(
    stub: HubStub, server: EmulatorServer, clock: ManualClock
) -> None:
    request = pb.ActivityRequest(name="Act", version=sv("1")).SerializeToString()
    with server.backend.transaction() as tx:
        for n in range(10_000):
            insert_instance(tx, "default", StartOptions(f"v1-{n}", "V", version="1"), clock.now(), f"e{n}")
            tx.add_activity("default", f"v1-{n}", 1, "Act", "1", request)
    iid = start(stub, "V", version=sv("2"))
    newer = WorkStream(stub, _filters({"V": ["2"]}))
    turn = newer.next()
    assert turn.orchestratorRequest.instanceId == iid
    versioned = pb.OrchestratorAction(id=1, scheduleTask=pb.ScheduleTaskAction(name="Act", version=sv("2")))
    complete(stub, turn, versioned)
    activities = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(activities=[pb.ActivityFilter(name="Act", versions=["2"])])
        ),
    )
    got = activities.next().activityRequest
    assert got.orchestrationInstance.instanceId == iid and got.version.value == "2"


def _wait_released(server: EmulatorServer, token: str) -> None:
    """Waits until the emulator has noticed a cancelled stream and given back what it held."""
    deadline = time.monotonic() + 10
    while token in server.dispatcher._leases and time.monotonic() < deadline:
        time.sleep(0.01)
    assert token not in server.dispatcher._leases


@pytest.mark.adversarial
def test_a_late_completion_from_a_dropped_stream_counts_until_the_work_is_redelivered(
    stub: HubStub, server: EmulatorServer
) -> None:
    iid = start(stub)
    orchestrations = WorkStream(stub, _filters({"Orch": []}))
    complete(stub, orchestrations.next(), schedule(1, "Act"), schedule(2, "Act"))
    blipped = WorkStream(stub, _filters(activities=["Act"]))
    first, second = blipped.next(), blipped.next()
    blipped.cancel()  # a network blip: the worker still runs both activities
    _wait_released(server, first.completionToken)
    # Nothing has taken the first activity since: its result is accepted, and it does not run again.
    stub.CompleteActivityTask(
        pb.ActivityResponse(instanceId=iid, taskId=1, result=sv('"one"'), completionToken=first.completionToken)
    )
    # The second was offered again meanwhile, so the first worker's token for it no longer counts.
    retry = WorkStream(stub, _filters(activities=["Act"]))
    again = retry.next()
    assert again.activityRequest.taskId == 2
    with pytest.raises(grpc.RpcError) as err:
        stub.CompleteActivityTask(
            pb.ActivityResponse(instanceId=iid, taskId=2, result=sv('"late"'), completionToken=second.completionToken)
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert retry.nothing_for(0.3)
    stub.CompleteActivityTask(
        pb.ActivityResponse(instanceId=iid, taskId=2, result=sv('"two"'), completionToken=again.completionToken)
    )
    completed: dict[int, str] = {}
    while len(completed) < 2:
        turn = orchestrations.next()
        for event in turn.orchestratorRequest.newEvents:
            if event.HasField("taskCompleted"):
                completed[event.taskCompleted.taskScheduledId] = event.taskCompleted.result.value
        complete(stub, turn)
    assert completed == {1: '"one"', 2: '"two"'}
