"""A completion over a size limit fails its work at once, naming the limit, instead of coming back forever."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from dtscale_emulator.limits import Limits
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, finish, kinds, schedule, start, status_of, sv, uid

pytestmark = pytest.mark.adversarial

BIG = "x" * (2 * 1024 * 1024)
FAILED = pb.ORCHESTRATION_STATUS_FAILED


def _failure(stub: HubStub, iid: str) -> pb.TaskFailureDetails:
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert state.orchestrationStatus == FAILED
    return state.failureDetails


def _refused(call: object, code: grpc.StatusCode) -> str:
    assert isinstance(call, grpc.RpcError) and call.code() == code  # type: ignore[attr-defined]
    return call.details() or ""  # type: ignore[attr-defined]


def test_an_oversized_activity_result_fails_the_activity(stub: HubStub) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "Big"))
    activity = work.next()
    with pytest.raises(grpc.RpcError) as err:
        stub.CompleteActivityTask(
            pb.ActivityResponse(instanceId=iid, taskId=1, result=sv(BIG), completionToken=activity.completionToken)
        )
    assert "1048576" in _refused(err.value, grpc.StatusCode.INVALID_ARGUMENT)
    turn = work.next().orchestratorRequest
    assert kinds(turn.newEvents)[1:] == ["taskFailed"]
    failed = turn.newEvents[1].taskFailed.failureDetails
    assert failed.errorType == "PayloadTooLarge" and failed.isNonRetriable
    assert (
        "'Big'" in failed.errorMessage and "result is 2097152 bytes; the limit is 1048576 bytes" in failed.errorMessage
    )
    # Nothing comes back: the activity is done with, even once its lease would have run out.
    assert work.nothing_for(0.3)


@pytest.mark.parametrize(
    ("field", "actions", "custom_status"),
    [
        ("completeOrchestration.result", [finish(1, BIG)], None),
        ("scheduleTask.input", [schedule(1, "A", BIG)], None),
        ("customStatus", [], sv(BIG)),
    ],
)
def test_an_oversized_orchestrator_payload_fails_the_orchestration(
    stub: HubStub,
    clock: ManualClock,
    field: str,
    actions: list[pb.OrchestratorAction],
    custom_status: object,
) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    with pytest.raises(grpc.RpcError) as err:
        complete(stub, work.next(), *actions, customStatus=custom_status)
    assert field in _refused(err.value, grpc.StatusCode.INVALID_ARGUMENT)
    failure = _failure(stub, iid)
    assert failure.errorType == "PayloadTooLarge"
    assert field in failure.errorMessage and "the limit is 1048576 bytes" in failure.errorMessage
    clock.advance(3600)  # well past the lease timeout: the work item is not offered again
    assert work.nothing_for(0.3)
    assert stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState.orchestrationStatus == FAILED


def test_a_malformed_response_is_still_refused_without_failing_the_orchestration(stub: HubStub) -> None:
    iid = start(stub)
    item = WorkStream(stub).next()
    with pytest.raises(grpc.RpcError) as err:
        complete(stub, item, pb.OrchestratorAction(id=1))
    assert "sets no action kind" in _refused(err.value, grpc.StatusCode.INVALID_ARGUMENT)
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_PENDING
    complete(stub, item, finish(1, '"ok"'))  # the lease was kept
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED


def test_an_oversized_entity_state_fails_the_batch_and_keeps_the_state(stub: HubStub) -> None:
    entity = f"@counter@{uid()}"
    caller = start(stub, "Caller")
    orchestrations = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Caller")])
        ),
    )
    called = pb.EntityOperationCalledEvent(
        requestId="req", operation="grow", parentInstanceId=sv(caller), targetInstanceId=sv(entity)
    )
    call = pb.OrchestratorAction(id=1, sendEntityMessage=pb.SendEntityMessageAction(entityOperationCalled=called))
    complete(stub, orchestrations.next(), call)
    entities = WorkStream(
        stub, pb.GetWorkItemsRequest(workItemFilters=pb.WorkItemFilters(entities=[pb.EntityFilter(name="counter")]))
    )
    batch = entities.next()
    ok = pb.OperationResult(success=pb.OperationResultSuccess())
    with pytest.raises(grpc.RpcError) as err:
        stub.CompleteEntityTask(
            pb.EntityBatchResult(completionToken=batch.completionToken, results=[ok], entityState=sv(BIG))
        )
    assert "entityState" in _refused(err.value, grpc.StatusCode.INVALID_ARGUMENT)
    answer = orchestrations.next().orchestratorRequest.newEvents[1]
    assert answer.entityOperationFailed.requestId == "req"
    assert "the limit is 1048576 bytes" in answer.entityOperationFailed.failureDetails.errorMessage
    assert not stub.GetEntity(pb.GetEntityRequest(instanceId=entity)).exists  # the state was never stored
    assert entities.nothing_for(0.3)


@pytest.fixture
def limited() -> Iterator[HubStub]:
    server = EmulatorServer(port=0, in_memory=True, clock=ManualClock(), limits=Limits(max_history_events=6))
    with server, grpc.insecure_channel(server.address) as channel:
        yield HubStub(channel, "default")


def test_a_turn_over_the_history_limit_fails_the_orchestration(limited: HubStub) -> None:
    iid = start(limited)
    work = WorkStream(limited)
    with pytest.raises(grpc.RpcError) as err:
        complete(limited, work.next(), *[schedule(i, "A") for i in range(1, 8)])
    assert "history limit of 6 events" in _refused(err.value, grpc.StatusCode.RESOURCE_EXHAUSTED)
    failure = _failure(limited, iid)
    assert failure.errorType == "HistoryTooLarge" and "history limit of 6 events" in failure.errorMessage
    assert work.nothing_for(0.3)  # neither the turn nor its activities come back
