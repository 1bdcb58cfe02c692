"""Durable entities through raw stubs: signals, batches, state, calls from orchestrations, locks, queries."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, finish, kinds, start, status_of, sv, uid


def _entity_stream(stub: HubStub, *names: str) -> WorkStream:
    filters = pb.WorkItemFilters(entities=[pb.EntityFilter(name=n) for n in names])
    return WorkStream(stub, pb.GetWorkItemsRequest(workItemFilters=filters))


def _ok(result: str | None = None) -> pb.OperationResult:
    return pb.OperationResult(success=pb.OperationResultSuccess(result=sv(result) if result is not None else None))


def _finish_batch(
    stub: HubStub, item: pb.WorkItem, state: str | None, *results: pb.OperationResult, **kw: object
) -> None:
    stub.CompleteEntityTask(
        pb.EntityBatchResult(
            completionToken=item.completionToken,
            results=list(results),
            entityState=sv(state) if state is not None else None,
            **kw,  # type: ignore[arg-type]
        )
    )


def _entity_action(action_id: int, **message: object) -> pb.OrchestratorAction:
    return pb.OrchestratorAction(id=action_id, sendEntityMessage=pb.SendEntityMessageAction(**message))  # type: ignore[arg-type]


def test_signals_are_batched_and_state_is_stored(stub: HubStub) -> None:
    entity = f"@counter@{uid()}"
    for n in ("1", "2"):
        stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="add", input=sv(n), requestId=uid("r")))
    assert not stub.GetEntity(pb.GetEntityRequest(instanceId=entity)).exists  # no state yet
    item = _entity_stream(stub, "Counter").next()
    req = item.entityRequestV2
    assert req.instanceId == entity and not req.HasField("entityState")
    assert [e.entityOperationSignaled.input.value for e in req.operationRequests] == ["1", "2"]
    _finish_batch(stub, item, "3", _ok(), _ok())
    got = stub.GetEntity(pb.GetEntityRequest(instanceId=entity, includeState=True))
    assert got.exists and got.entity.serializedState.value == "3" and got.entity.backlogQueueSize == 0
    without = stub.GetEntity(pb.GetEntityRequest(instanceId=entity))
    assert not without.entity.HasField("serializedState")


def test_entity_ids_and_state_size_are_validated(stub: HubStub) -> None:
    with pytest.raises(grpc.RpcError) as err:
        stub.SignalEntity(pb.SignalEntityRequest(instanceId="not-an-entity", name="add"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    entity = f"@counter@{uid()}"
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="add"))
    item = _entity_stream(stub, "counter").next()
    with pytest.raises(grpc.RpcError) as err:
        _finish_batch(stub, item, "x" * (1024 * 1024 + 1), _ok())
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "entityState" in (err.value.details() or "")


def test_stale_entity_tokens_are_rejected_and_abandoned_batches_return(stub: HubStub) -> None:
    entity = f"@counter@{uid()}"
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="add"))
    work = _entity_stream(stub, "counter")
    item = work.next()
    stub.AbandonTaskEntityWorkItem(pb.AbandonEntityTaskRequest(completionToken=item.completionToken))
    again = work.next()
    assert again.entityRequestV2.instanceId == entity
    with pytest.raises(grpc.RpcError) as err:
        _finish_batch(stub, item, "1", _ok())
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    _finish_batch(stub, again, "1", _ok())


def test_entity_filters_route_by_name_case_insensitively(stub: HubStub) -> None:
    entity = f"@mine@{uid()}"
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="op"))
    assert _entity_stream(stub, "other").nothing_for(0.3)
    assert _entity_stream(stub, "MINE").next().entityRequestV2.instanceId == entity


def test_orchestration_calls_entity_and_gets_the_result(stub: HubStub) -> None:
    iid = start(stub, "Caller")
    entity = f"@counter@{uid()}"
    orchestrations = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Caller")])
        ),
    )
    called = pb.EntityOperationCalledEvent(
        requestId="req-1", operation="get", parentInstanceId=sv(iid), targetInstanceId=sv(entity)
    )
    complete(stub, orchestrations.next(), _entity_action(1, entityOperationCalled=called))
    batch = _entity_stream(stub, "counter").next()
    assert batch.entityRequestV2.operationRequests[0].entityOperationCalled.requestId == "req-1"
    _finish_batch(stub, batch, "0", _ok("42"))
    new = orchestrations.next().orchestratorRequest
    assert kinds(new.newEvents)[1] == "entityOperationCompleted"
    assert new.newEvents[1].entityOperationCompleted.requestId == "req-1"
    assert new.newEvents[1].entityOperationCompleted.output.value == "42"
    assert kinds(new.pastEvents)[2] == "entityOperationCalled"


def test_locked_entities_only_serve_the_lock_holder(stub: HubStub) -> None:
    holder, entity = start(stub, "Holder"), f"@counter@{uid()}"
    orchestrations = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Holder")])
        ),
    )
    lock = pb.EntityLockRequestedEvent(criticalSectionId="cs-1", lockSet=[entity], parentInstanceId=sv(holder))
    complete(stub, orchestrations.next(), _entity_action(1, entityLockRequested=lock))
    granted = orchestrations.next()
    assert granted.orchestratorRequest.newEvents[1].entityLockGranted.criticalSectionId == "cs-1"
    assert stub.GetEntity(pb.GetEntityRequest(instanceId=entity)).exists is False  # locked but stateless

    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="outsider"))
    entity_work = _entity_stream(stub, "counter")
    assert entity_work.nothing_for(0.3)  # the outsider's signal waits for the lock

    called = pb.EntityOperationCalledEvent(
        requestId="r", operation="inside", parentInstanceId=sv(holder), targetInstanceId=sv(entity)
    )
    complete(stub, granted, _entity_action(2, entityOperationCalled=called))
    inside = entity_work.next()
    assert [e.entityOperationCalled.operation for e in inside.entityRequestV2.operationRequests] == ["inside"]
    _finish_batch(stub, inside, "1", _ok())

    unlock = pb.EntityUnlockSentEvent(
        criticalSectionId="cs-1", parentInstanceId=sv(holder), targetInstanceId=sv(entity)
    )
    complete(stub, orchestrations.next(), _entity_action(3, entityUnlockSent=unlock))
    outsider = entity_work.next()
    assert outsider.entityRequestV2.operationRequests[0].entityOperationSignaled.operation == "outsider"


def test_entity_actions_signal_others_and_start_orchestrations(stub: HubStub) -> None:
    source, target, started = f"@counter@{uid()}", f"@counter@{uid()}", uid("from-entity")
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=source, name="fan"))
    work = _entity_stream(stub, "counter")
    actions = [
        pb.OperationAction(id=0, sendSignal=pb.SendSignalAction(instanceId=target, name="ping", input=sv("1"))),
        pb.OperationAction(
            id=1, startNewOrchestration=pb.StartNewOrchestrationAction(instanceId=started, name="Spawned")
        ),
    ]
    _finish_batch(stub, work.next(), None, _ok(), actions=actions)
    ping = work.next().entityRequestV2
    assert ping.instanceId == target and ping.operationRequests[0].entityOperationSignaled.operation == "ping"
    assert stub.GetInstance(pb.GetInstanceRequest(instanceId=started)).orchestrationState.name == "Spawned"


def test_query_and_clean_entity_storage(stub: HubStub) -> None:
    prefix = f"@counter@{uid()}"
    work = _entity_stream(stub, "counter")
    for i in range(4):
        stub.SignalEntity(pb.SignalEntityRequest(instanceId=f"{prefix}-{i}", name="set"))
        _finish_batch(stub, work.next(), None if i == 3 else str(i), _ok())
    query = pb.EntityQuery(instanceIdStartsWith=sv(prefix), includeState=True)
    found = stub.QueryEntities(pb.QueryEntitiesRequest(query=query)).entities
    assert [(e.instanceId, e.serializedState.value) for e in found] == [(f"{prefix}-{i}", str(i)) for i in range(3)]
    # An entity whose state was deleted is gone at once, as in DTS: not even a transient query reports it.
    transient = pb.EntityQuery(instanceIdStartsWith=sv(prefix), includeTransient=True)
    assert len(stub.QueryEntities(pb.QueryEntitiesRequest(query=transient)).entities) == 3
    paged = pb.EntityQuery(
        instanceIdStartsWith=sv(prefix), includeTransient=True, pageSize=wrappers_pb2.Int32Value(value=2)
    )
    first = stub.QueryEntities(pb.QueryEntitiesRequest(query=paged))
    assert len(first.entities) == 2 and first.HasField("continuationToken")
    paged.continuationToken.CopyFrom(first.continuationToken)
    assert [e.instanceId for e in stub.QueryEntities(pb.QueryEntitiesRequest(query=paged)).entities] == [f"{prefix}-2"]
    cleaned = stub.CleanEntityStorage(pb.CleanEntityStorageRequest(removeEmptyEntities=True, releaseOrphanedLocks=True))
    assert (cleaned.emptyEntitiesRemoved, cleaned.orphanedLocksReleased) == (0, 0)
    assert len(stub.QueryEntities(pb.QueryEntitiesRequest(query=transient)).entities) == 3


def test_terminating_the_lock_holder_frees_its_entities(stub: HubStub) -> None:
    holder, entity = start(stub, "Holder"), f"@counter@{uid()}"
    orchestrations = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Holder")])
        ),
    )
    lock = pb.EntityLockRequestedEvent(criticalSectionId="cs", lockSet=[entity], parentInstanceId=sv(holder))
    complete(stub, orchestrations.next(), _entity_action(1, entityLockRequested=lock))
    complete(stub, orchestrations.next())  # lock granted; the holder now waits
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="outsider"))
    entity_work = _entity_stream(stub, "counter")
    assert entity_work.nothing_for(0.3)
    stub.TerminateInstance(pb.TerminateRequest(instanceId=holder))
    complete(stub, orchestrations.next())
    outsider = entity_work.next()
    assert outsider.entityRequestV2.operationRequests[0].entityOperationSignaled.operation == "outsider"


def _drain(work: WorkStream, stub: HubStub, entity: str, count: int) -> list[str]:
    """Runs the batches offered for ``entity`` until ``count`` operations ran; returns their names."""
    done: list[str] = []
    while len(done) < count:
        item = work.next()
        assert item.entityRequestV2.instanceId == entity
        operations = item.entityRequestV2.operationRequests
        done += [op.entityOperationSignaled.operation for op in operations]
        _finish_batch(stub, item, str(len(done)), *[_ok() for _ in operations])
    return done


@pytest.mark.adversarial
def test_a_locked_entity_with_a_long_queue_starves_no_other_entity(stub: HubStub) -> None:
    """The lock holder waits for entity B while 1,000 signals queue up for the entity it locked."""
    holder, locked, other = start(stub, "Holder"), f"@counter@{uid()}", f"@counter@{uid()}"
    orchestrations = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Holder")])
        ),
    )
    lock = pb.EntityLockRequestedEvent(criticalSectionId="cs", lockSet=[locked], parentInstanceId=sv(holder))
    complete(stub, orchestrations.next(), _entity_action(1, entityLockRequested=lock))
    granted = orchestrations.next()
    for n in range(1000):
        stub.SignalEntity(pb.SignalEntityRequest(instanceId=locked, name=f"op{n}", requestId=f"r{n}"))
    called = pb.EntityOperationCalledEvent(
        requestId="call-b", operation="get", parentInstanceId=sv(holder), targetInstanceId=sv(other)
    )
    complete(stub, granted, _entity_action(2, entityOperationCalled=called))

    entity_work = _entity_stream(stub, "counter")
    answer = entity_work.next()
    assert answer.entityRequestV2.instanceId == other
    _finish_batch(stub, answer, "7", _ok("7"))
    resumed = orchestrations.next()
    assert resumed.orchestratorRequest.newEvents[1].entityOperationCompleted.output.value == "7"
    unlock = pb.EntityUnlockSentEvent(criticalSectionId="cs", parentInstanceId=sv(holder), targetInstanceId=sv(locked))
    complete(stub, resumed, _entity_action(3, entityUnlockSent=unlock), finish(4, "done"))
    assert status_of(stub, holder) == pb.ORCHESTRATION_STATUS_COMPLETED

    assert _drain(entity_work, stub, locked, 1000) == [f"op{n}" for n in range(1000)]
    state = stub.GetEntity(pb.GetEntityRequest(instanceId=locked, includeState=True)).entity.serializedState
    assert state.value == "1000"
    assert stub.GetEntity(pb.GetEntityRequest(instanceId=locked)).entity.backlogQueueSize == 0
