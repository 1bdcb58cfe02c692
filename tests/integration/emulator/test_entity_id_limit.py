"""Entity IDs (``@name@key``) over DTS's 100-character instance ID limit are refused wherever they are sent."""

from __future__ import annotations

import grpc
import pytest

from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, start, sv, uid

FAILED = pb.ORCHESTRATION_STATUS_FAILED


def entity_id(length: int) -> str:
    prefix = "@counter@"
    return prefix + "k" * (length - len(prefix))


def _refusal(call: object) -> str:
    assert isinstance(call, grpc.RpcError) and call.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    return call.details() or ""  # type: ignore[attr-defined]


def test_a_signal_to_an_entity_id_over_100_characters_is_refused(stub: HubStub) -> None:
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity_id(100), name="add", requestId=uid("r")))
    with pytest.raises(grpc.RpcError) as err:
        stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity_id(101), name="add", requestId=uid("r")))
    assert _refusal(err.value) == (
        "instanceId is 101 characters; the limit is 100 (for an entity, '@name@key' as a whole)"
    )
    # Nothing was queued for the refused ID.
    listed = stub.QueryEntities(pb.QueryEntitiesRequest(query=pb.EntityQuery(includeTransient=True)))
    assert [e.instanceId for e in listed.entities] == [entity_id(100)]


def test_getting_an_entity_id_over_100_characters_is_refused(stub: HubStub) -> None:
    assert not stub.GetEntity(pb.GetEntityRequest(instanceId=entity_id(100))).exists
    with pytest.raises(grpc.RpcError) as err:
        stub.GetEntity(pb.GetEntityRequest(instanceId=entity_id(150)))
    assert "instanceId is 150 characters; the limit is 100" in _refusal(err.value)


def _message(action_id: int, **message: object) -> pb.OrchestratorAction:
    return pb.OrchestratorAction(id=action_id, sendEntityMessage=pb.SendEntityMessageAction(**message))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (
            "actions[1].sendEntityMessage.entityOperationSignaled.targetInstanceId",
            {
                "entityOperationSignaled": pb.EntityOperationSignaledEvent(
                    operation="add", targetInstanceId=sv(entity_id(120))
                )
            },
        ),
        (
            "actions[1].sendEntityMessage.entityOperationCalled.targetInstanceId",
            {
                "entityOperationCalled": pb.EntityOperationCalledEvent(
                    operation="get", targetInstanceId=sv(entity_id(120))
                )
            },
        ),
        (
            "actions[1].sendEntityMessage.entityLockRequested.lockSet[1]",
            {
                "entityLockRequested": pb.EntityLockRequestedEvent(
                    criticalSectionId="cs", lockSet=[entity_id(10), entity_id(120)]
                )
            },
        ),
    ],
    ids=["signal", "call", "lock"],
)
def test_an_orchestration_sending_to_an_entity_id_over_the_limit_fails(
    stub: HubStub, field: str, message: dict[str, object]
) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    item = work.next()
    with pytest.raises(grpc.RpcError) as err:
        complete(stub, item, _message(1, **message))
    assert f"{field} is 120 characters; the limit is 100" in _refusal(err.value)
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert state.orchestrationStatus == FAILED
    assert state.failureDetails.errorType == "EntityIdTooLong"
    assert f"{field} is 120 characters" in state.failureDetails.errorMessage
    # Nothing reached any entity, and the turn does not come back.
    listed = stub.QueryEntities(pb.QueryEntitiesRequest(query=pb.EntityQuery(includeTransient=True)))
    assert list(listed.entities) == []
    assert work.nothing_for(0.3)


def test_an_entity_signalling_an_entity_id_over_the_limit_fails_its_batch(stub: HubStub) -> None:
    sender = f"@sender@{uid()}"
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=sender, name="forward", requestId=uid("r")))
    work = WorkStream(
        stub, pb.GetWorkItemsRequest(workItemFilters=pb.WorkItemFilters(entities=[pb.EntityFilter(name="sender")]))
    )
    item = work.next()
    signal = pb.OperationAction(id=0, sendSignal=pb.SendSignalAction(instanceId=entity_id(101), name="add"))
    ok = pb.OperationResult(success=pb.OperationResultSuccess())
    with pytest.raises(grpc.RpcError) as err:
        stub.CompleteEntityTask(
            pb.EntityBatchResult(
                completionToken=item.completionToken, results=[ok], actions=[signal], entityState=sv("1")
            )
        )
    assert "actions[0].sendSignal.instanceId is 101 characters; the limit is 100" in _refusal(err.value)
    # The batch failed: the state it would have set was not kept, and no entity got the signal.
    assert not stub.GetEntity(pb.GetEntityRequest(instanceId=sender, includeState=True)).exists
    listed = stub.QueryEntities(pb.QueryEntitiesRequest(query=pb.EntityQuery(includeTransient=True)))
    assert list(listed.entities) == []
