"""Rewind through raw stubs: executionRewound delivery, history replacement, recursive rewind of children."""

from __future__ import annotations

from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, finish, history, kinds, start, status_of, sv


def _fail(action_id: int = 9) -> pb.OrchestratorAction:
    action = finish(action_id, status=pb.ORCHESTRATION_STATUS_FAILED)
    action.completeOrchestration.failureDetails.CopyFrom(pb.TaskFailureDetails(errorType="E", errorMessage="broke"))
    return action


def _rewrite(events: list[pb.HistoryEvent], drop: set[str], new_execution: str) -> list[pb.HistoryEvent]:
    kept = []
    for e in events:
        if e.WhichOneof("eventType") in drop:
            continue
        copy = pb.HistoryEvent()
        copy.CopyFrom(e)
        if copy.HasField("executionStarted"):
            copy.executionStarted.orchestrationInstance.executionId.value = new_execution
        kept.append(copy)
    return kept


def _rewind_action(item: pb.WorkItem, drop: set[str], new_execution: str) -> pb.OrchestratorAction:
    req = item.orchestratorRequest
    history = _rewrite([*req.pastEvents, *req.newEvents], drop, new_execution)
    return pb.OrchestratorAction(id=-1, rewindOrchestration=pb.RewindOrchestrationAction(newHistory=history))


def test_rewind_replaces_history_and_runs_again(stub: HubStub) -> None:
    iid = start(stub, "R")
    work = WorkStream(stub)
    complete(stub, work.next(), _fail())
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_FAILED

    stub.RewindInstance(pb.RewindInstanceRequest(instanceId=iid, reason=sv("try again")))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_RUNNING
    item = work.next()
    assert kinds(item.orchestratorRequest.newEvents) == ["orchestratorStarted", "executionRewound"]
    assert item.orchestratorRequest.newEvents[1].executionRewound.reason.value == "try again"
    complete(stub, item, _rewind_action(item, {"executionCompleted"}, "exec-2"))

    replay_item = work.next()
    replay = replay_item.orchestratorRequest
    assert kinds(replay.newEvents) == ["orchestratorStarted"]
    assert "executionCompleted" not in kinds(replay.pastEvents)
    assert "executionRewound" in kinds(replay.pastEvents)
    assert replay.executionId.value == "exec-2"
    complete(stub, replay_item, finish(1, '"ok"'))
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED


def test_rewinding_a_parent_rewinds_its_failed_child(stub: HubStub) -> None:
    parent = start(stub, "Parent")
    work = WorkStream(stub)
    create = pb.OrchestratorAction(
        id=1, createSubOrchestration=pb.CreateSubOrchestrationAction(instanceId=parent + "-c", name="Child")
    )
    complete(stub, work.next(), create)
    complete(stub, work.next(), _fail())  # the child fails
    parent_item = work.next()
    assert kinds(parent_item.orchestratorRequest.newEvents)[1] == "subOrchestrationInstanceFailed"
    complete(stub, parent_item, _fail())

    stub.RewindInstance(pb.RewindInstanceRequest(instanceId=parent))
    item = work.next()
    complete(stub, item, _rewind_action(item, {"executionCompleted", "subOrchestrationInstanceFailed"}, "p2"))

    seen = {}
    for _ in range(2):
        got = work.next()
        seen[got.orchestratorRequest.instanceId] = got
    child_item = seen[parent + "-c"]
    rewound = child_item.orchestratorRequest.newEvents[1].executionRewound
    assert rewound.parentExecutionId.value == "p2"
    assert status_of(stub, parent + "-c") == pb.ORCHESTRATION_STATUS_RUNNING
    complete(stub, seen[parent])  # the parent's replay waits for the child
    complete(stub, child_item, _rewind_action(child_item, {"executionCompleted"}, "c2"))
    complete(stub, work.next(), finish(1, "7"))  # the child's replay succeeds this time
    result = work.next().orchestratorRequest.newEvents
    assert result[1].subOrchestrationInstanceCompleted.taskScheduledId == 1
    assert result[1].subOrchestrationInstanceCompleted.result.value == "7"
    assert kinds(history(stub, parent)).count("subOrchestrationInstanceCreated") == 1
