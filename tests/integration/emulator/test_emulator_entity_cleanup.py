"""Empty entities disappear on their own (as in DTS); CleanEntityStorage works in bounded chunks."""

from __future__ import annotations

import pytest

from dtscale_emulator.engine import queries
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import EntityRecord
from durabletask import client
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, start, sv, uid
from .test_emulator_entities import _entity_action, _entity_stream, _finish_batch, _ok


def _transient(stub: HubStub, prefix: str) -> list[str]:
    query = pb.EntityQuery(instanceIdStartsWith=sv(prefix), includeTransient=True)
    return [e.instanceId for e in stub.QueryEntities(pb.QueryEntitiesRequest(query=query)).entities]


def _clean(stub: HubStub) -> tuple[int, int]:
    answer = stub.CleanEntityStorage(pb.CleanEntityStorageRequest(removeEmptyEntities=True, releaseOrphanedLocks=True))
    return answer.emptyEntitiesRemoved, answer.orphanedLocksReleased


def test_an_entity_whose_state_is_deleted_is_removed_on_its_own(stub: HubStub) -> None:
    entity = f"@counter@{uid()}"
    work = _entity_stream(stub, "counter")
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="set"))
    _finish_batch(stub, work.next(), "5", _ok())
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="delete"))
    _finish_batch(stub, work.next(), None, _ok())
    assert _transient(stub, entity) == []
    assert _clean(stub) == (0, 0)


def test_an_entity_with_queued_operations_stays_when_its_state_is_deleted(stub: HubStub) -> None:
    entity = f"@counter@{uid()}"
    work = _entity_stream(stub, "counter")
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="delete"))
    item = work.next()
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="set"))  # queued while the batch runs
    _finish_batch(stub, item, None, _ok())
    assert _transient(stub, entity) == [entity]
    _finish_batch(stub, work.next(), "1", _ok())
    assert stub.GetEntity(pb.GetEntityRequest(instanceId=entity, includeState=True)).entity.serializedState.value == "1"


@pytest.mark.parametrize("how", ["unlock", "terminate"])
def test_a_stateless_entity_is_removed_when_its_lock_is_released(stub: HubStub, how: str) -> None:
    holder, entity = start(stub, "Holder"), f"@counter@{uid()}"
    only_holder = pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Holder")])
    orchestrations = WorkStream(stub, pb.GetWorkItemsRequest(workItemFilters=only_holder))
    lock = pb.EntityLockRequestedEvent(criticalSectionId="cs", lockSet=[entity], parentInstanceId=sv(holder))
    complete(stub, orchestrations.next(), _entity_action(1, entityLockRequested=lock))
    granted = orchestrations.next()  # the lock is granted: the entity exists, locked, without state
    assert _transient(stub, entity) == [entity]
    if how == "unlock":
        unlock = pb.EntityUnlockSentEvent(criticalSectionId="cs", targetInstanceId=sv(entity))
        complete(stub, granted, _entity_action(2, entityUnlockSent=unlock))
    else:
        complete(stub, granted)
        stub.TerminateInstance(pb.TerminateRequest(instanceId=holder))
        complete(stub, orchestrations.next())
    assert _transient(stub, entity) == []
    assert _clean(stub) == (0, 0)
    orchestrations.cancel()


def _leftover_empty_entities(server: EmulatorServer, prefix: str, count: int) -> list[str]:
    # Rows an older emulator left behind (it kept entities without state until cleaned).
    ids = [f"{prefix}{i}" for i in range(count)]
    with server.backend.transaction() as tx:
        for entity_id in ids:
            tx.put_entity(EntityRecord("default", entity_id, None, 1))
    return ids


@pytest.mark.adversarial
def test_clean_entity_storage_works_in_chunks_and_serves_calls_between_them(
    server: EmulatorServer, stub: HubStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "CLEAN_PAGE", 2)
    prefix = f"@counter@{uid()}-"
    _leftover_empty_entities(server, prefix, 5)
    request = pb.CleanEntityStorageRequest(removeEmptyEntities=True, releaseOrphanedLocks=True)
    chunks = []
    while True:
        answer = stub.CleanEntityStorage(request)
        chunks.append(answer.emptyEntitiesRemoved)
        assert stub.StartInstance(pb.CreateInstanceRequest(instanceId=uid(), name="Between")).instanceId
        if not answer.HasField("continuationToken"):
            break
        request.continuationToken.CopyFrom(answer.continuationToken)
    assert chunks == [2, 2, 1] and _transient(stub, prefix) == []


def test_the_sdk_sums_every_chunk(server: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queries, "CLEAN_PAGE", 2)
    _leftover_empty_entities(server, f"@counter@{uid()}-", 5)
    c = client.TaskHubGrpcClient(host_address=server.address)
    try:
        result = c.clean_entity_storage()
    finally:
        c.close()
    assert (result.empty_entities_removed, result.orphaned_locks_released) == (5, 0)


def test_an_unknown_continuation_token_is_no_error(stub: HubStub) -> None:
    request = pb.CleanEntityStorageRequest(removeEmptyEntities=True, continuationToken=sv("@zzz@none"))
    answer = stub.CleanEntityStorage(request)
    assert (answer.emptyEntitiesRemoved, answer.HasField("continuationToken")) == (0, False)
