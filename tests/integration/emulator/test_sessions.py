"""Extended sessions and history streaming on the wire: what the emulator sends to which stream, and when."""

from __future__ import annotations

import grpc

from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._protocol_extensions import EXTENDED_SESSIONS_CAPABILITY

from .conftest import HubStub, WorkStream, complete, finish, history, kinds, schedule, start, status_of, sv

SESSIONS = pb.GetWorkItemsRequest(capabilities=[EXTENDED_SESSIONS_CAPABILITY])  # type: ignore[list-item]
STREAMING = pb.GetWorkItemsRequest(capabilities=[pb.WORKER_CAPABILITY_HISTORY_STREAMING])


def is_continuation(request: pb.OrchestratorRequest) -> bool:
    value = request.properties.get("IncludePastEvents")
    return value is not None and value.WhichOneof("kind") == "bool_value" and not value.bool_value


def run_activity(stub: HubStub, work: WorkStream, result: str) -> None:
    finish_activity(stub, work.next(), result)


def finish_activity(stub: HubStub, item: pb.WorkItem, result: str) -> None:
    act = item.activityRequest
    assert item.HasField("activityRequest")
    stub.CompleteActivityTask(
        pb.ActivityResponse(
            instanceId=act.orchestrationInstance.instanceId,
            taskId=act.taskId,
            result=sv(result),
            completionToken=item.completionToken,
        )
    )


def test_a_session_stream_gets_only_new_events_after_its_first_completion(stub: HubStub) -> None:
    iid = start(stub, "Chain")
    work = WorkStream(stub, SESSIONS)
    first = work.next()
    assert not is_continuation(first.orchestratorRequest)
    # A full work item to a worker that keeps sessions says this backend will continue it.
    assert first.orchestratorRequest.properties["IncludePastEvents"].bool_value is True
    complete(stub, first, schedule(1, "A"))
    run_activity(stub, work, '"a"')

    item = work.next()
    second = item.orchestratorRequest
    assert is_continuation(second)
    assert list(second.pastEvents) == []
    assert kinds(second.newEvents) == ["orchestratorStarted", "taskCompleted"]
    assert second.executionId.value == first.orchestratorRequest.executionId.value
    complete(stub, item, finish(2, '"done"'))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED
    assert kinds(history(stub, iid))[-1] == "executionCompleted"


def test_streams_without_the_capability_always_get_full_histories(stub: HubStub) -> None:
    start(stub, "Chain")
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "A"))
    run_activity(stub, work, '"a"')
    second = work.next().orchestratorRequest
    assert not is_continuation(second)
    assert kinds(second.pastEvents)[:2] == ["orchestratorStarted", "executionStarted"]
    assert "IncludePastEvents" not in second.properties  # nothing offered to a worker that keeps no sessions


def test_requires_history_redelivers_the_same_events_in_full(stub: HubStub, server: EmulatorServer) -> None:
    start(stub, "Chain")
    work = WorkStream(stub, SESSIONS)
    complete(stub, work.next(), schedule(1, "A"))
    run_activity(stub, work, '"a"')
    continued = work.next()
    assert is_continuation(continued.orchestratorRequest)
    before = server.dispatcher.history_requests
    complete(stub, continued, requiresHistory=True)
    assert server.dispatcher.history_requests == before + 1

    again = work.next().orchestratorRequest
    assert not is_continuation(again)
    assert kinds(again.pastEvents) == ["orchestratorStarted", "executionStarted", "taskScheduled"]
    assert list(again.newEvents) == list(continued.orchestratorRequest.newEvents)


def test_an_abandoned_continuation_comes_back_in_full(stub: HubStub) -> None:
    start(stub, "Chain")
    work = WorkStream(stub, SESSIONS)
    complete(stub, work.next(), schedule(1, "A"))
    run_activity(stub, work, '"a"')
    continued = work.next()
    assert is_continuation(continued.orchestratorRequest)
    stub.AbandonTaskOrchestratorWorkItem(pb.AbandonOrchestrationTaskRequest(completionToken=continued.completionToken))
    assert not is_continuation(work.next().orchestratorRequest)


def test_another_stream_does_not_take_an_instance_held_by_a_session(stub: HubStub) -> None:
    iid = start(stub, "Chain")
    holder = WorkStream(stub, SESSIONS)
    complete(stub, holder.next(), schedule(1, "A"))
    other = WorkStream(stub, SESSIONS)
    run_activity(stub, holder, '"a"')
    assert other.nothing_for(0.5)
    item = holder.next()
    assert item.orchestratorRequest.instanceId == iid and is_continuation(item.orchestratorRequest)


def test_when_the_holding_stream_goes_away_another_gets_the_full_history(stub: HubStub) -> None:
    iid = start(stub, "Chain")
    holder = WorkStream(stub, SESSIONS)
    complete(stub, holder.next(), schedule(1, "A"))
    run_activity(stub, holder, '"a"')
    holder.cancel()
    other = WorkStream(stub, SESSIONS)
    item = other.next(timeout=10).orchestratorRequest
    assert item.instanceId == iid and not is_continuation(item)
    assert len(item.pastEvents) == 3  # orchestratorStarted, executionStarted, taskScheduled


def test_continue_as_new_starts_over_with_a_full_work_item(stub: HubStub) -> None:
    iid = start(stub, "Loop", input=sv("0"))
    work = WorkStream(stub, SESSIONS)
    first = work.next()
    again = pb.OrchestratorAction(
        id=1,
        completeOrchestration=pb.CompleteOrchestrationAction(
            orchestrationStatus=pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW, result=sv("1")
        ),
    )
    complete(stub, first, again)
    second = work.next().orchestratorRequest
    assert second.instanceId == iid and not is_continuation(second)
    assert second.executionId.value != first.orchestratorRequest.executionId.value
    assert kinds(second.newEvents)[:2] == ["orchestratorStarted", "executionStarted"]


def test_large_histories_are_left_out_for_streaming_workers(stub: HubStub, server: EmulatorServer) -> None:
    server.engine.history_streaming_threshold = 2_000
    iid = start(stub, "Big")
    work = WorkStream(stub, STREAMING)
    complete(stub, work.next(), *[schedule(i, "A", '"' + "x" * 50 + '"') for i in range(1, 51)])
    activities = [work.next() for _ in range(50)]
    for activity in activities:
        finish_activity(stub, activity, '"r"')
    item = work.next()
    request = item.orchestratorRequest
    assert request.requiresHistoryStreaming and not request.pastEvents
    streamed = history(stub, iid)
    assert len(streamed) == 52  # orchestratorStarted, executionStarted, 50 taskScheduled
    complete(stub, item, finish(99, '"ok"'))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED


def test_workers_that_cannot_stream_get_large_histories_inline(stub: HubStub, server: EmulatorServer) -> None:
    server.engine.history_streaming_threshold = 2_000
    plain_id = start(stub, "Big")
    plain = WorkStream(stub)
    complete(stub, plain.next(), *[schedule(i, "A", '"' + "x" * 50 + '"') for i in range(1, 51)])
    activities = [plain.next() for _ in range(50)]
    for activity in activities:
        finish_activity(stub, activity, '"r"')
    full = plain.next().orchestratorRequest
    assert full.instanceId == plain_id and not full.requiresHistoryStreaming
    assert len(full.pastEvents) == 52


def test_a_completion_after_its_stream_ended_keeps_no_session(stub: HubStub, server: EmulatorServer) -> None:
    iid = start(stub, "Chain")
    holder = WorkStream(stub, SESSIONS)
    item = holder.next()
    lease_stream = next(iter(server.dispatcher._leases.values())).stream
    # The stream goes away while its completion is being applied: no mark may outlive it.
    server.dispatcher.sessions.drop_stream(lease_stream.id)
    complete(stub, item, schedule(1, "A"))
    assert len(server.dispatcher.sessions) == 0
    holder.cancel()
    other = WorkStream(stub, SESSIONS)
    run_activity(stub, other, '"a"')
    follow_up = other.next().orchestratorRequest
    assert follow_up.instanceId == iid and not is_continuation(follow_up)


def test_instances_a_vanished_stream_held_wake_a_stream_that_takes_them() -> None:
    server = EmulatorServer(port=0, in_memory=True, health_ping_interval=15.0).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = HubStub(channel, "default")
            holder = WorkStream(
                stub,
                pb.GetWorkItemsRequest(
                    capabilities=[EXTENDED_SESSIONS_CAPABILITY], maxConcurrentOrchestrationWorkItems=1
                ),
            )
            held = start(stub, "Chain")
            complete(stub, holder.next())  # X waits for an event; the holder's session keeps it
            start(stub, "Other")
            holder.next()  # the holder's one slot is taken by another orchestration, never completed
            stub.RaiseEvent(pb.RaiseEventRequest(instanceId=held, name="go"))  # X runnable, but held
            chains = WorkStream(
                stub, pb.GetWorkItemsRequest(workItemFilters=pb.WorkItemFilters(orchestrations=[
                    pb.OrchestrationFilter(name="Chain")]))
            )  # fmt: skip
            assert chains.nothing_for(0.3)
            holder.cancel()
            # Only the freed session says that "Chain" work is there (the released lease was an "Other"'s).
            assert chains.next(timeout=5).orchestratorRequest.instanceId == held
            chains.cancel()
    finally:
        server.close()
