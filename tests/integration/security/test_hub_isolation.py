"""Task-hub isolation: no RPC made in one hub reads or changes another hub's instances, entities or work."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.integration.emulator.conftest import HubStub, WorkStream, complete, finish, kinds, schedule, sv

ENTITY = "@counter@k1"


@pytest.fixture
def server() -> Iterator[EmulatorServer]:
    srv = EmulatorServer(port=0, in_memory=True, task_hubs=("alpha", "beta"), health_ping_interval=0.2)
    srv.start()
    yield srv
    srv.close()


@pytest.fixture
def stubs(server: EmulatorServer) -> Iterator[tuple[HubStub, HubStub]]:
    with grpc.insecure_channel(server.address) as channel:
        yield HubStub(channel, "alpha"), HubStub(channel, "beta")


def _code(call: Callable[[], Any]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        result = call()
        if isinstance(result, Iterator):
            list(result)
    return info.value.code()


def _setup_alpha(alpha: HubStub, beta_stream: WorkStream) -> tuple[str, pb.WorkItem, WorkStream]:
    alpha.StartInstance(pb.CreateInstanceRequest(instanceId="shared-id", name="Orch", input=sv('"alpha"')))
    alpha.SignalEntity(pb.SignalEntityRequest(instanceId=ENTITY, name="add", input=sv("1"), requestId="r1"))
    stream = WorkStream(alpha)
    items = [stream.next(), stream.next()]
    orchestration = next(i for i in items if i.HasField("orchestratorRequest"))
    entity = next(i for i in items if i.HasField("entityRequestV2"))
    assert orchestration.orchestratorRequest.instanceId == "shared-id"
    assert [op.entityOperationSignaled.operation for op in entity.entityRequestV2.operationRequests] == ["add"]
    assert beta_stream.nothing_for(0.5), "beta received alpha's work"
    return "shared-id", orchestration, stream


def test_no_rpc_in_beta_reaches_alpha(stubs: tuple[HubStub, HubStub]) -> None:
    alpha, beta = stubs
    beta_stream = WorkStream(beta)
    iid, item, alpha_stream = _setup_alpha(alpha, beta_stream)
    token = item.completionToken

    # Beta cannot settle alpha's work item, whatever token it presents.
    assert _code(lambda: complete(beta, item, finish(0, '"stolen"'))) == grpc.StatusCode.FAILED_PRECONDITION
    abandon = pb.AbandonOrchestrationTaskRequest(completionToken=token)
    assert _code(lambda: beta.AbandonTaskOrchestratorWorkItem(abandon)) == grpc.StatusCode.FAILED_PRECONDITION

    # Reads see nothing.
    assert not beta.GetInstance(pb.GetInstanceRequest(instanceId=iid)).exists
    assert not beta.WaitForInstanceStart(pb.GetInstanceRequest(instanceId=iid)).exists
    assert not beta.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId=iid)).exists
    assert not beta.QueryInstances(pb.QueryInstancesRequest(query=pb.InstanceQuery())).orchestrationState
    assert not beta.ListInstanceIds(pb.ListInstanceIdsRequest()).instanceIds
    assert not beta.GetEntity(pb.GetEntityRequest(instanceId=ENTITY)).exists
    assert not beta.QueryEntities(pb.QueryEntitiesRequest(query=pb.EntityQuery())).entities
    assert _code(lambda: beta.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId=iid))) == (
        grpc.StatusCode.NOT_FOUND
    )

    # Writes addressed at alpha's instance do not find it.
    writes: list[tuple[str, Any]] = [
        ("RaiseEvent", pb.RaiseEventRequest(instanceId=iid, name="approve")),
        ("TerminateInstance", pb.TerminateRequest(instanceId=iid)),
        ("SuspendInstance", pb.SuspendRequest(instanceId=iid)),
        ("ResumeInstance", pb.ResumeRequest(instanceId=iid)),
        ("RewindInstance", pb.RewindInstanceRequest(instanceId=iid)),
        ("RestartInstance", pb.RestartInstanceRequest(instanceId=iid)),
    ]
    for rpc, request in writes:
        assert _code(functools.partial(getattr(beta, rpc), request)) == grpc.StatusCode.NOT_FOUND, rpc
    purged = beta.PurgeInstances(pb.PurgeInstancesRequest(instanceId=iid))
    assert purged.deletedInstanceCount == 0
    purge_all = pb.PurgeInstancesRequest(purgeInstanceFilter=pb.PurgeInstanceFilter(runtimeStatus=[]))
    assert beta.PurgeInstances(purge_all).deletedInstanceCount == 0
    skip = pb.SkipGracefulOrchestrationTerminationsRequest(instanceBatch=pb.InstanceBatch(instanceIds=[iid]))
    beta.SkipGracefulOrchestrationTerminations(skip)
    beta.CleanEntityStorage(pb.CleanEntityStorageRequest(removeEmptyEntities=True, releaseOrphanedLocks=True))
    beta.SignalEntity(pb.SignalEntityRequest(instanceId=ENTITY, name="reset", requestId="r2"))
    # The same instance ID may exist in beta independently.
    beta.StartInstance(pb.CreateInstanceRequest(instanceId=iid, name="Other", input=sv('"beta"')))
    beta.DeleteTaskHub(pb.DeleteTaskHubRequest())

    _assert_alpha_untouched(alpha, item)
    # Alpha's next work is its own activity; beta's signal to an entity with the same ID never shows up.
    assert alpha_stream.next().activityRequest.name == "Step"
    assert alpha_stream.nothing_for(0.5)
    alpha_stream.cancel()
    beta_stream.cancel()


def _assert_alpha_untouched(alpha: HubStub, item: pb.WorkItem) -> None:
    iid = item.orchestratorRequest.instanceId
    state = alpha.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert state.name == "Orch" and state.input.value == '"alpha"'
    assert state.orchestrationStatus in (pb.ORCHESTRATION_STATUS_PENDING, pb.ORCHESTRATION_STATUS_RUNNING)
    # Alpha's lease survived everything beta did: its token still completes the work item.
    complete(alpha, item, schedule(0, "Step"))
    chunks = alpha.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId=iid))
    history = kinds(event for chunk in chunks for event in chunk.events)
    assert "eventRaised" not in history and "executionTerminated" not in history
    assert "executionSuspended" not in history and history.count("executionStarted") == 1


def test_unknown_hub_is_not_created_by_calls(server: EmulatorServer) -> None:
    with grpc.insecure_channel(server.address) as channel:
        ghost = HubStub(channel, "ghost")
        code = _code(lambda: ghost.GetInstance(pb.GetInstanceRequest(instanceId="x")))
        assert code == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.RpcError) as info:
            ghost.StartInstance(pb.CreateInstanceRequest(instanceId="x", name="n"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert info.value.details() == "Task hub not found: ghost"
