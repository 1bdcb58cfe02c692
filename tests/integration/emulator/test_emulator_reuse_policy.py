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


def _suspended(stub: HubStub) -> str:
    iid = start(stub, "Waits")
    work = WorkStream(stub)
    complete(stub, work.next())
    stub.SuspendInstance(pb.SuspendRequest(instanceId=iid))
    complete(stub, work.next())  # the worker sees executionSuspended
    work.cancel()
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_SUSPENDED
    return iid


# What durabletask-js and -dotnet send for dedupe statuses TERMINATED, RUNNING and PENDING: every other status.
REPLACE_ALL_BUT_TERMINATED_RUNNING_PENDING = [
    pb.ORCHESTRATION_STATUS_COMPLETED,
    pb.ORCHESTRATION_STATUS_FAILED,
    pb.ORCHESTRATION_STATUS_CANCELED,
    pb.ORCHESTRATION_STATUS_SUSPENDED,
]


def test_a_policy_replacing_unfinished_but_not_terminated_instances_is_refused(stub: HubStub) -> None:
    """DTS validates the combination itself, before looking at the existing instance (here a suspended one)."""
    iid = _suspended(stub)
    policy = pb.OrchestrationIdReusePolicy(replaceableStatus=REPLACE_ALL_BUT_TERMINATED_RUNNING_PENDING)
    with pytest.raises(grpc.RpcError) as err:
        start(stub, "Replacement", instance_id=iid, orchestrationIdReusePolicy=policy)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (err.value.details() or "").startswith(
        "Invalid reusable statuses: cannot exclude 'Terminated' while also allowing reuse of running instances"
    )
    assert "ORCHESTRATION_STATUS_SUSPENDED" in (err.value.details() or "")
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState
    assert (state.name, state.orchestrationStatus) == ("Waits", pb.ORCHESTRATION_STATUS_SUSPENDED)
    # The same policy is refused for a new ID as well.
    with pytest.raises(grpc.RpcError) as err:
        start(stub, "Replacement", orchestrationIdReusePolicy=policy)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    "unfinished",
    [pb.ORCHESTRATION_STATUS_RUNNING, pb.ORCHESTRATION_STATUS_PENDING, pb.ORCHESTRATION_STATUS_SUSPENDED],
)
def test_each_unfinished_status_needs_terminated_too(stub: HubStub, unfinished: int) -> None:
    policy = pb.OrchestrationIdReusePolicy(replaceableStatus=[pb.ORCHESTRATION_STATUS_COMPLETED, unfinished])
    with pytest.raises(grpc.RpcError) as err:
        start(stub, "Any", orchestrationIdReusePolicy=policy)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    policy.replaceableStatus.append(pb.ORCHESTRATION_STATUS_TERMINATED)
    start(stub, "Any", orchestrationIdReusePolicy=policy)


def test_a_valid_policy_with_suspended_replaces_a_suspended_instance(stub: HubStub) -> None:
    iid = _suspended(stub)
    policy = pb.OrchestrationIdReusePolicy(
        replaceableStatus=[*REPLACE_ALL_BUT_TERMINATED_RUNNING_PENDING, pb.ORCHESTRATION_STATUS_TERMINATED]
    )
    start(stub, "Replacement", instance_id=iid, orchestrationIdReusePolicy=policy)
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState
    assert (state.name, state.orchestrationStatus) == ("Replacement", pb.ORCHESTRATION_STATUS_PENDING)


def test_a_policy_naming_no_known_status_is_refused(stub: HubStub) -> None:
    policy = pb.OrchestrationIdReusePolicy(replaceableStatus=[pb.ORCHESTRATION_STATUS_COMPLETED, 42])  # type: ignore[list-item]
    with pytest.raises(grpc.RpcError) as err:
        start(stub, "Any", orchestrationIdReusePolicy=policy)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "orchestrationIdReusePolicy.replaceableStatus holds [42]" in (err.value.details() or "")
