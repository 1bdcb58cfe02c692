"""StartInstance with an ID that exists: what an explicit, empty reuse policy replaces (nothing)."""

from __future__ import annotations

import grpc
import pytest

from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, finish, start, status_of


def _completed(stub: HubStub) -> str:
    iid = start(stub, "Once")
    work = WorkStream(stub)
    complete(stub, work.next(), finish(1, '"done"'))
    work.cancel()
    return iid


def test_an_empty_reuse_policy_replaces_no_finished_instance(stub: HubStub) -> None:
    iid = _completed(stub)
    never = pb.OrchestrationIdReusePolicy(replaceableStatus=[])
    with pytest.raises(grpc.RpcError) as err:
        start(stub, "Twice", instance_id=iid, orchestrationIdReusePolicy=never)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert (state.name, state.output.value) == ("Once", '"done"')
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED


def test_an_empty_reuse_policy_replaces_no_running_instance(stub: HubStub) -> None:
    iid = start(stub, "Running")
    never = pb.OrchestrationIdReusePolicy()
    with pytest.raises(grpc.RpcError) as err:
        start(stub, "Other", instance_id=iid, orchestrationIdReusePolicy=never)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_the_start_attach_sends_never_replaces_a_finished_instance(stub: HubStub) -> None:
    from durabletask._client import attach
    from durabletask._client import requests as rq
    from durabletask.serialization import JsonDataConverter

    iid = _completed(stub)
    built = rq.build_schedule_new_orchestration_request(
        "Once", input=None, instance_id=iid, reuse_id_policy=attach._NEVER_REPLACE, converter=JsonDataConverter()
    )
    assert built.request.HasField("orchestrationIdReusePolicy")
    with pytest.raises(grpc.RpcError) as err:
        stub.StartInstance(built.request)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_COMPLETED
