"""Orchestration and activity flow through raw gRPC stubs: work items, history, timers, sub-orchestrations."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import empty_pb2

from dtscale_emulator.ops.clock import ManualClock
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import (
    HubStub,
    WorkStream,
    complete,
    finish,
    history,
    kinds,
    later,
    schedule,
    start,
    status_of,
    sv,
    timer,
    ts,
)


def test_hello_answers(stub: HubStub) -> None:
    assert stub.Hello(empty_pb2.Empty()) == empty_pb2.Empty()


def test_activity_round_trip_builds_the_expected_history(stub: HubStub) -> None:
    iid = start(stub, "Chain", input=sv('"in"'))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_PENDING
    work = WorkStream(stub)

    first = work.next()
    req = first.orchestratorRequest
    assert req.instanceId == iid and not req.pastEvents
    assert kinds(req.newEvents) == ["orchestratorStarted", "executionStarted"]
    assert req.newEvents[1].executionStarted.input.value == '"in"'
    complete(stub, first, schedule(7, "Greet", '"x"'))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_RUNNING

    act = work.next().activityRequest
    assert (act.name, act.taskId, act.input.value) == ("Greet", 7, '"x"')
    assert act.orchestrationInstance.instanceId == iid
    assert act.orchestrationInstance.executionId.value == req.executionId.value


def test_full_chain_with_history_and_output(stub: HubStub) -> None:
    iid = start(stub, "Chain")
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "Greet", '"a"'))
    act_item = work.next()
    stub.CompleteActivityTask(
        pb.ActivityResponse(instanceId=iid, taskId=1, result=sv('"hi a"'), completionToken=act_item.completionToken)
    )
    second_item = work.next()
    second = second_item.orchestratorRequest
    # As on DTS, no orchestratorCompleted closes a turn's events.
    assert kinds(second.pastEvents) == ["orchestratorStarted", "executionStarted", "taskScheduled"]
    assert second.pastEvents[2].eventId == 1
    assert kinds(second.newEvents) == ["orchestratorStarted", "taskCompleted"]
    assert second.newEvents[1].taskCompleted.taskScheduledId == 1
    assert second.newEvents[1].taskCompleted.result.value == '"hi a"'
    complete(stub, second_item, finish(2, '"done"'))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED


def test_completion_sets_output_and_execution_completed(stub: HubStub) -> None:
    iid = start(stub, "Chain")
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "Greet"))
    act = work.next()
    stub.CompleteActivityTask(
        pb.ActivityResponse(instanceId=iid, taskId=1, result=sv("1"), completionToken=act.completionToken)
    )
    complete(stub, work.next(), finish(2, '"done"'), customStatus=sv('"cs"'))
    got = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert got.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED
    assert got.output.value == '"done"' and got.customStatus.value == '"cs"'
    assert got.HasField("completedTimestamp")
    events = history(stub, iid)
    assert kinds(events)[-2:] == ["taskCompleted", "executionCompleted"]
    assert events[-1].executionCompleted.result.value == '"done"'


def test_activity_failure_reaches_the_orchestrator(stub: HubStub) -> None:
    iid = start(stub, "Chain")
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "Boom"))
    act = work.next()
    details = pb.TaskFailureDetails(errorType="ValueError", errorMessage="bad")
    stub.CompleteActivityTask(
        pb.ActivityResponse(instanceId=iid, taskId=1, failureDetails=details, completionToken=act.completionToken)
    )
    new = work.next().orchestratorRequest.newEvents
    assert kinds(new) == ["orchestratorStarted", "taskFailed"]
    assert new[1].taskFailed.failureDetails.errorMessage == "bad"


def test_timer_fires_only_when_the_manual_clock_passes_it(stub: HubStub, clock: ManualClock) -> None:
    start(stub, "Sleepy")
    work = WorkStream(stub)
    complete(stub, work.next(), timer(1, later(clock, 60)))
    clock.advance(30)
    assert work.nothing_for(0.3)
    clock.advance(31)
    new = work.next().orchestratorRequest.newEvents
    assert kinds(new) == ["orchestratorStarted", "timerFired"]
    assert new[1].timerFired.timerId == 1


def test_scheduled_start_waits_for_its_time(stub: HubStub, clock: ManualClock) -> None:
    start(stub, "Later", scheduledStartTimestamp=ts(later(clock, 100)))
    work = WorkStream(stub)
    assert work.nothing_for(0.3)
    clock.advance(101)
    assert kinds(work.next().orchestratorRequest.newEvents)[1] == "executionStarted"


def test_sub_orchestration_gets_parent_info_and_reports_back(stub: HubStub) -> None:
    parent = start(stub, "Parent")
    work = WorkStream(stub)
    create = pb.OrchestratorAction(
        id=3,
        createSubOrchestration=pb.CreateSubOrchestrationAction(instanceId=parent + "-c", name="Child", input=sv("5")),
    )
    complete(stub, work.next(), create)
    child_item = work.next()
    started = child_item.orchestratorRequest.newEvents[1].executionStarted
    assert child_item.orchestratorRequest.instanceId == parent + "-c"
    assert started.parentInstance.taskScheduledId == 3
    assert started.parentInstance.orchestrationInstance.instanceId == parent
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=parent + "-c")).orchestrationState
    assert state.parentInstanceId.value == parent
    complete(stub, child_item, finish(1, "6"))
    new = work.next().orchestratorRequest.newEvents
    assert kinds(new) == ["orchestratorStarted", "subOrchestrationInstanceCompleted"]
    assert new[1].subOrchestrationInstanceCompleted.taskScheduledId == 3
    assert new[1].subOrchestrationInstanceCompleted.result.value == "6"


def test_failed_sub_orchestration_reports_failure(stub: HubStub) -> None:
    parent = start(stub, "Parent")
    work = WorkStream(stub)
    create = pb.OrchestratorAction(
        id=4, createSubOrchestration=pb.CreateSubOrchestrationAction(instanceId=parent + "-c", name="Child")
    )
    complete(stub, work.next(), create)
    child = work.next()
    failed = finish(1, status=pb.ORCHESTRATION_STATUS_FAILED)
    failed.completeOrchestration.failureDetails.CopyFrom(
        pb.TaskFailureDetails(errorType="E", errorMessage="child broke")
    )
    complete(stub, child, failed)
    new = work.next().orchestratorRequest.newEvents
    assert new[1].subOrchestrationInstanceFailed.taskScheduledId == 4
    assert new[1].subOrchestrationInstanceFailed.failureDetails.errorMessage == "child broke"


def test_send_event_is_raised_on_the_target(stub: HubStub) -> None:
    target = start(stub, "Target")
    work = WorkStream(stub)
    complete(stub, work.next())  # target now running, waiting
    sender = start(stub, "Sender")
    send = pb.OrchestratorAction(
        id=1,
        sendEvent=pb.SendEventAction(instance=pb.OrchestrationInstance(instanceId=target), name="ping", data=sv("1")),
    )
    complete(stub, work.next(), send, finish(2))
    got = work.next().orchestratorRequest
    assert got.instanceId == target
    assert got.newEvents[1].eventRaised.name == "ping" and got.newEvents[1].eventRaised.input.value == "1"
    assert kinds(history(stub, sender))[2] == "eventSent"


def test_continue_as_new_starts_a_fresh_execution_with_carryover(stub: HubStub) -> None:
    iid = start(stub, "Loop", input=sv("0"))
    work = WorkStream(stub)
    first = work.next()
    old_exec = first.orchestratorRequest.executionId.value
    carry = pb.HistoryEvent(eventId=-1, eventRaised=pb.EventRaisedEvent(name="kept", input=sv("k")))
    can = finish(1, "1", status=pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW)
    can.completeOrchestration.carryoverEvents.append(carry)
    can.completeOrchestration.newVersion.value = "v2"
    complete(stub, first, can)
    second = work.next().orchestratorRequest
    assert not second.pastEvents
    assert kinds(second.newEvents) == ["orchestratorStarted", "executionStarted", "eventRaised"]
    started = second.newEvents[1].executionStarted
    assert started.input.value == "1" and started.version.value == "v2"
    assert second.executionId.value != old_exec
    assert started.orchestrationInstance.executionId.value == second.executionId.value
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert state.input.value == "1" and state.version.value == "v2"


def test_stream_instance_history_of_unknown_instance_is_not_found(stub: HubStub) -> None:
    with pytest.raises(grpc.RpcError) as err:
        history(stub, "nope")
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_history_is_streamed_in_chunks(stub: HubStub) -> None:
    iid = start(stub, "Many")
    work = WorkStream(stub)
    complete(stub, work.next(), *[schedule(i, "A") for i in range(1, 301)])
    chunks = list(stub.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId=iid)))
    assert len(chunks) >= 2
    assert sum(len(c.events) for c in chunks) == 2 + 300  # orchestratorStarted, executionStarted, the tasks


def test_activities_not_yet_handed_out_are_dropped_when_the_orchestration_ends(stub: HubStub) -> None:
    iid = start(stub, "Ends")
    orchestrations = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Ends")])
        ),
    )
    complete(stub, orchestrations.next(), schedule(1, "Slow"), schedule(2, "Slow"))
    only_slow = pb.WorkItemFilters(activities=[pb.ActivityFilter(name="Slow")])
    runner = WorkStream(stub, pb.GetWorkItemsRequest(maxConcurrentActivityWorkItems=1, workItemFilters=only_slow))
    running = runner.next()  # one activity is out; the other waits
    stub.TerminateInstance(pb.TerminateRequest(instanceId=iid))
    complete(stub, orchestrations.next())
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_TERMINATED
    # The running one may still report back (accepted, result dropped); the waiting one never starts.
    stub.CompleteActivityTask(
        pb.ActivityResponse(
            instanceId=iid, taskId=running.activityRequest.taskId, completionToken=running.completionToken
        )
    )
    assert runner.nothing_for(0.3)


@pytest.mark.parametrize("status", [pb.ORCHESTRATION_STATUS_PENDING, pb.ORCHESTRATION_STATUS_RUNNING, 99])
def test_a_completion_with_a_status_that_ends_nothing_is_refused_and_changes_nothing(
    stub: HubStub, status: int
) -> None:
    iid = start(stub, "Chain")
    work = WorkStream(stub)
    item = work.next()
    ending = pb.OrchestratorAction(
        id=2, completeOrchestration=pb.CompleteOrchestrationAction(orchestrationStatus=status)  # type: ignore[arg-type]
    )
    with pytest.raises(grpc.RpcError) as err:
        complete(stub, item, schedule(1, "Greet"), ending)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "actions[2].completeOrchestration.orchestrationStatus" in (err.value.details() or "")
    got = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState
    assert got.orchestrationStatus == pb.ORCHESTRATION_STATUS_PENDING
    assert not history(stub, iid)
