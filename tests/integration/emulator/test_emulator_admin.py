"""Client-side RPCs through raw stubs: task hubs, limits, ID reuse, waits, terminate/suspend, query, purge, restart."""

from __future__ import annotations

import threading

import grpc
import pytest

from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, finish, history, kinds, start, status_of, sv, uid

TERMINAL = [pb.ORCHESTRATION_STATUS_COMPLETED, pb.ORCHESTRATION_STATUS_FAILED, pb.ORCHESTRATION_STATUS_TERMINATED]


def _code(call) -> grpc.StatusCode:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        call()
    return err.value.code()  # type: ignore[no-any-return]


def _run_to_completion(stub: HubStub, name: str = "Orch", result: str = '"ok"') -> str:
    iid = start(stub, name)
    work = WorkStream(stub)
    complete(stub, work.next(), finish(1, result))
    work.cancel()
    return iid


# Task hubs -----------------------------------------------------------------------------------------
def test_unknown_task_hub_is_not_found(channel: grpc.Channel) -> None:
    with pytest.raises(grpc.RpcError) as err:
        HubStub(channel, "nowhere").GetInstance(pb.GetInstanceRequest(instanceId="x"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert err.value.details() == "Task hub not found: nowhere"


def test_task_hubs_are_isolated(channel: grpc.Channel) -> None:
    alpha, beta = HubStub(channel, "alpha"), HubStub(channel, "beta")
    iid = start(alpha, "Orch")
    assert not beta.GetInstance(pb.GetInstanceRequest(instanceId=iid)).exists
    beta_work = WorkStream(beta)
    assert beta_work.nothing_for(0.3)
    assert WorkStream(alpha).next().orchestratorRequest.instanceId == iid


def test_create_and_delete_task_hub(channel: grpc.Channel) -> None:
    fresh = HubStub(channel, uid("hub"))
    assert _code(lambda: fresh.GetInstance(pb.GetInstanceRequest(instanceId="x"))) == grpc.StatusCode.NOT_FOUND
    fresh.CreateTaskHub(pb.CreateTaskHubRequest())
    iid = start(fresh)
    assert fresh.GetInstance(pb.GetInstanceRequest(instanceId=iid)).exists
    fresh.CreateTaskHub(pb.CreateTaskHubRequest(recreateIfExists=True))
    assert not fresh.GetInstance(pb.GetInstanceRequest(instanceId=iid)).exists
    fresh.DeleteTaskHub(pb.DeleteTaskHubRequest())
    assert _code(lambda: fresh.GetInstance(pb.GetInstanceRequest(instanceId=iid))) == grpc.StatusCode.NOT_FOUND


def test_dynamic_task_hubs_are_created_on_first_use() -> None:
    with (
        EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True) as srv,
        grpc.insecure_channel(srv.address) as ch,
    ):
        stub = HubStub(ch, "made-up")
        iid = start(stub)
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).exists


# Limits --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("instance_id", "fragment"),
    [("x" * 101, "limit is 100"), ("@entity", "must not start with '@'"), ("tab\there", "printable ASCII")],
)
def test_instance_id_rules(stub: HubStub, instance_id: str, fragment: str) -> None:
    with pytest.raises(grpc.RpcError) as err:
        stub.StartInstance(pb.CreateInstanceRequest(instanceId=instance_id, name="O"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "instanceId" in (err.value.details() or "") and fragment in (err.value.details() or "")


def test_payload_limits_name_the_field(stub: HubStub) -> None:
    big = sv("x" * (1024 * 1024 + 1))
    with pytest.raises(grpc.RpcError) as err:
        stub.StartInstance(pb.CreateInstanceRequest(instanceId=uid(), name="O", input=big))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "input" in (err.value.details() or "")
    assert "1048576" in (err.value.details() or "")
    iid = start(stub)
    with pytest.raises(grpc.RpcError) as err:
        stub.RaiseEvent(pb.RaiseEventRequest(instanceId=iid, name="e", input=big))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Completions over a limit fail their work instead (tests/integration/emulator/test_refused_completions.py).


# ID reuse ------------------------------------------------------------------------------------------
def test_running_instance_cannot_be_started_again(stub: HubStub) -> None:
    iid = start(stub)
    assert _code(lambda: start(stub, instance_id=iid)) == grpc.StatusCode.ALREADY_EXISTS


def test_terminal_instance_is_replaced_without_a_policy(stub: HubStub) -> None:
    iid = _run_to_completion(stub)
    start(stub, "Again", instance_id=iid)
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState
    assert state.name == "Again" and state.orchestrationStatus == pb.ORCHESTRATION_STATUS_PENDING


def test_reuse_policy_controls_replacement(stub: HubStub) -> None:
    iid = start(stub)
    only_done = pb.OrchestrationIdReusePolicy(replaceableStatus=[pb.ORCHESTRATION_STATUS_COMPLETED])
    assert (
        _code(lambda: start(stub, instance_id=iid, orchestrationIdReusePolicy=only_done))
        == grpc.StatusCode.ALREADY_EXISTS
    )
    # Replacing an unfinished instance terminates it first, so TERMINATED must be replaceable too (as on DTS).
    pending_ok = pb.OrchestrationIdReusePolicy(
        replaceableStatus=[pb.ORCHESTRATION_STATUS_PENDING, pb.ORCHESTRATION_STATUS_TERMINATED]
    )
    start(stub, "Replacement", instance_id=iid, orchestrationIdReusePolicy=pending_ok)
    assert stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState.name == "Replacement"


# Waits ---------------------------------------------------------------------------------------------
def test_wait_for_completion_honours_the_deadline(stub: HubStub) -> None:
    iid = start(stub)
    with pytest.raises(grpc.RpcError) as err:
        stub.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId=iid), timeout=0.5)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_waits_wake_when_the_state_changes(stub: HubStub) -> None:
    iid = start(stub)
    results: dict[str, pb.GetInstanceResponse] = {}

    def wait(kind: str) -> None:
        results[kind] = getattr(stub, kind)(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True))

    waiters = [threading.Thread(target=wait, args=(k,)) for k in ("WaitForInstanceStart", "WaitForInstanceCompletion")]
    for t in waiters:
        t.start()
    complete(stub, WorkStream(stub).next(), finish(1, '"r"'))
    for t in waiters:
        t.join(10)
    assert results["WaitForInstanceStart"].orchestrationState.orchestrationStatus != pb.ORCHESTRATION_STATUS_PENDING
    assert results["WaitForInstanceCompletion"].orchestrationState.output.value == '"r"'


def test_wait_for_unknown_instance_reports_missing(stub: HubStub) -> None:
    assert not stub.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId="ghost")).exists


# Terminate, suspend, resume, raise ---------------------------------------------------------------
def test_terminating_a_never_started_instance_is_immediate(stub: HubStub) -> None:
    iid = start(stub)
    stub.TerminateInstance(pb.TerminateRequest(instanceId=iid, output=sv('"bye"')))
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert state.orchestrationStatus == pb.ORCHESTRATION_STATUS_TERMINATED and state.output.value == '"bye"'


def test_terminating_a_running_instance_goes_through_the_orchestrator(stub: HubStub) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    complete(stub, work.next())
    stub.TerminateInstance(pb.TerminateRequest(instanceId=iid, output=sv('"stop"')))
    item = work.next()
    assert kinds(item.orchestratorRequest.newEvents)[1] == "executionTerminated"
    complete(stub, item)
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_TERMINATED
    assert kinds(history(stub, iid))[-1] == "executionCompleted"


def test_recursive_termination_reaches_children(stub: HubStub) -> None:
    parent = start(stub, "Parent")
    work = WorkStream(
        stub,
        pb.GetWorkItemsRequest(
            workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Parent")])
        ),
    )
    create = pb.OrchestratorAction(
        id=1, createSubOrchestration=pb.CreateSubOrchestrationAction(instanceId=parent + "-c", name="Child")
    )
    complete(stub, work.next(), create)
    stub.TerminateInstance(pb.TerminateRequest(instanceId=parent, recursive=True))
    complete(stub, work.next())
    assert status_of(stub, parent) == pb.ORCHESTRATION_STATUS_TERMINATED
    assert status_of(stub, parent + "-c") == pb.ORCHESTRATION_STATUS_TERMINATED


def test_suspend_and_resume_are_delivered_as_events(stub: HubStub) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    complete(stub, work.next())
    stub.SuspendInstance(pb.SuspendRequest(instanceId=iid, reason=sv("pause")))
    item = work.next()
    assert kinds(item.orchestratorRequest.newEvents)[1] == "executionSuspended"
    complete(stub, item)
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_SUSPENDED
    stub.ResumeInstance(pb.ResumeRequest(instanceId=iid))
    complete(stub, work.next())
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_RUNNING


def test_operations_on_unknown_or_finished_instances(stub: HubStub) -> None:
    for call in (
        lambda: stub.RaiseEvent(pb.RaiseEventRequest(instanceId="ghost", name="e")),
        lambda: stub.TerminateInstance(pb.TerminateRequest(instanceId="ghost")),
        lambda: stub.SuspendInstance(pb.SuspendRequest(instanceId="ghost")),
        lambda: stub.ResumeInstance(pb.ResumeRequest(instanceId="ghost")),
        lambda: stub.RestartInstance(pb.RestartInstanceRequest(instanceId="ghost")),
        lambda: stub.RewindInstance(pb.RewindInstanceRequest(instanceId="ghost")),
    ):
        assert _code(call) == grpc.StatusCode.NOT_FOUND
    done = _run_to_completion(stub)
    assert (
        _code(lambda: stub.SuspendInstance(pb.SuspendRequest(instanceId=done))) == grpc.StatusCode.FAILED_PRECONDITION
    )
    assert (
        _code(lambda: stub.RewindInstance(pb.RewindInstanceRequest(instanceId=done)))
        == grpc.StatusCode.FAILED_PRECONDITION
    )


# Query, list, purge, restart -----------------------------------------------------------------------
def test_query_filters_and_pages(stub: HubStub) -> None:
    prefix = uid("q")
    ids = [start(stub, "Q", instance_id=f"{prefix}-{i}", input=sv(str(i))) for i in range(5)]
    page1 = stub.QueryInstances(
        pb.QueryInstancesRequest(query=pb.InstanceQuery(instanceIdPrefix=sv(prefix), maxInstanceCount=3))
    )
    assert [s.instanceId for s in page1.orchestrationState] == ids[:3]
    assert not page1.orchestrationState[0].HasField("input")
    page2 = stub.QueryInstances(
        pb.QueryInstancesRequest(
            query=pb.InstanceQuery(
                instanceIdPrefix=sv(prefix),
                maxInstanceCount=3,
                continuationToken=page1.continuationToken,
                fetchInputsAndOutputs=True,
            )
        )
    )
    assert [s.instanceId for s in page2.orchestrationState] == ids[3:]
    assert page2.orchestrationState[0].input.value == "3"
    assert not page2.HasField("continuationToken")
    running = stub.QueryInstances(
        pb.QueryInstancesRequest(
            query=pb.InstanceQuery(instanceIdPrefix=sv(prefix), runtimeStatus=[pb.ORCHESTRATION_STATUS_RUNNING])
        )
    )
    assert not running.orchestrationState


def test_query_by_created_time(stub: HubStub, clock: ManualClock) -> None:
    from .conftest import ts

    early = start(stub, "T")
    clock.advance(60)
    cutoff = clock.now()
    late = start(stub, "T")
    found = stub.QueryInstances(pb.QueryInstancesRequest(query=pb.InstanceQuery(createdTimeFrom=ts(cutoff))))
    ids = {s.instanceId for s in found.orchestrationState}
    assert late in ids and early not in ids


def test_list_instance_ids_only_lists_finished_instances(stub: HubStub) -> None:
    done = _run_to_completion(stub)
    running = start(stub)
    listed = stub.ListInstanceIds(pb.ListInstanceIdsRequest(pageSize=1000)).instanceIds
    assert done in listed and running not in listed


def test_purge_only_removes_finished_instances(stub: HubStub) -> None:
    done = _run_to_completion(stub)
    running = start(stub)
    assert stub.PurgeInstances(pb.PurgeInstancesRequest(instanceId=running)).deletedInstanceCount == 0
    response = stub.PurgeInstances(pb.PurgeInstancesRequest(instanceId=done))
    assert response.deletedInstanceCount == 1 and response.isComplete.value
    assert not stub.GetInstance(pb.GetInstanceRequest(instanceId=done)).exists


def test_purge_by_filter(stub: HubStub) -> None:
    done = [_run_to_completion(stub) for _ in range(3)]
    running = start(stub)
    flt = pb.PurgeInstanceFilter(runtimeStatus=[pb.ORCHESTRATION_STATUS_COMPLETED])
    assert stub.PurgeInstances(pb.PurgeInstancesRequest(purgeInstanceFilter=flt)).deletedInstanceCount == 3
    assert not any(stub.GetInstance(pb.GetInstanceRequest(instanceId=i)).exists for i in done)
    assert stub.GetInstance(pb.GetInstanceRequest(instanceId=running)).exists


def test_purge_by_filter_stops_at_its_timeout_and_says_what_is_left(
    stub: HubStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dtscale_emulator.engine import queries

    done = [_run_to_completion(stub) for _ in range(5)]
    monkeypatch.setattr(queries, "PURGE_PAGE", 2)
    flt = pb.PurgeInstanceFilter(runtimeStatus=[pb.ORCHESTRATION_STATUS_COMPLETED])
    flt.timeout.FromNanoseconds(1)  # spent before the first page ends: exactly one page goes
    first = stub.PurgeInstances(pb.PurgeInstancesRequest(purgeInstanceFilter=flt))
    assert first.deletedInstanceCount == 2 and not first.isComplete.value
    assert sum(stub.GetInstance(pb.GetInstanceRequest(instanceId=i)).exists for i in done) == 3
    flt.timeout.FromSeconds(60)
    rest = stub.PurgeInstances(pb.PurgeInstancesRequest(purgeInstanceFilter=flt))
    assert rest.deletedInstanceCount == 3 and rest.isComplete.value
    assert not any(stub.GetInstance(pb.GetInstanceRequest(instanceId=i)).exists for i in done)


def test_purge_by_filter_with_out_of_range_timeouts(stub: HubStub) -> None:
    # Found by fuzzing: a duration of 2**63-1 seconds overflowed instead of meaning "no practical limit".
    done = [_run_to_completion(stub) for _ in range(2)]
    flt = pb.PurgeInstanceFilter(runtimeStatus=[pb.ORCHESTRATION_STATUS_COMPLETED])
    flt.timeout.seconds = 2**63 - 1
    response = stub.PurgeInstances(pb.PurgeInstancesRequest(purgeInstanceFilter=flt))
    assert response.deletedInstanceCount == 2 and response.isComplete.value
    assert not any(stub.GetInstance(pb.GetInstanceRequest(instanceId=i)).exists for i in done)
    flt.timeout.seconds = -5  # a negative timeout is spent at once: nothing left to purge, still complete
    assert stub.PurgeInstances(pb.PurgeInstancesRequest(purgeInstanceFilter=flt)).isComplete.value


def test_purge_by_filter_with_a_timeout_that_ends_on_the_last_page_is_complete(
    stub: HubStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dtscale_emulator.engine import queries

    done = [_run_to_completion(stub) for _ in range(2)]
    monkeypatch.setattr(queries, "PURGE_PAGE", 2)
    flt = pb.PurgeInstanceFilter(runtimeStatus=[pb.ORCHESTRATION_STATUS_COMPLETED])
    flt.timeout.FromNanoseconds(1)
    response = stub.PurgeInstances(pb.PurgeInstancesRequest(purgeInstanceFilter=flt))
    assert response.deletedInstanceCount == 2 and response.isComplete.value
    assert not any(stub.GetInstance(pb.GetInstanceRequest(instanceId=i)).exists for i in done)


def test_restart_with_same_and_new_id(stub: HubStub) -> None:
    iid = start(stub, "R", input=sv('"seed"'))
    only_r = pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="R")])
    work = WorkStream(stub, pb.GetWorkItemsRequest(workItemFilters=only_r))
    complete(stub, work.next(), finish(1))
    assert (
        _code(lambda: stub.RestartInstance(pb.RestartInstanceRequest(instanceId=start(stub))))
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    same = stub.RestartInstance(pb.RestartInstanceRequest(instanceId=iid)).instanceId
    assert same == iid and status_of(stub, iid) == pb.ORCHESTRATION_STATUS_PENDING
    complete(stub, work.next(), finish(1))
    new = stub.RestartInstance(pb.RestartInstanceRequest(instanceId=iid, restartWithNewInstanceId=True)).instanceId
    assert new != iid
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=new, getInputsAndOutputs=True)).orchestrationState
    assert state.name == "R" and state.input.value == '"seed"'


def test_an_unfinished_instance_restarts_only_under_a_new_id(stub: HubStub) -> None:
    """DTS restarts a RUNNING instance under a new ID and leaves it running; a same-ID restart needs it finished."""
    iid = start(stub, "R2", input=sv('"seed"'))
    work = WorkStream(
        stub,
        pb.GetWorkItemsRequest(workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="R2")])),
    )
    complete(stub, work.next())  # it runs and waits (for an event that never comes)
    assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_RUNNING
    with pytest.raises(grpc.RpcError) as err:
        stub.RestartInstance(pb.RestartInstanceRequest(instanceId=iid))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "restartWithNewInstanceId" in (err.value.details() or "")
    new = stub.RestartInstance(pb.RestartInstanceRequest(instanceId=iid, restartWithNewInstanceId=True)).instanceId
    assert new != iid and status_of(stub, iid) == pb.ORCHESTRATION_STATUS_RUNNING
    started = work.next().orchestratorRequest
    assert started.instanceId == new
    assert started.newEvents[1].executionStarted.input.value == '"seed"'
    # One still PENDING (never run) restarts under a new ID too, and stays as it is.
    pending = start(stub, "NobodyRunsThis")
    copy = stub.RestartInstance(pb.RestartInstanceRequest(instanceId=pending, restartWithNewInstanceId=True))
    assert copy.instanceId != pending
    assert status_of(stub, pending) == status_of(stub, copy.instanceId) == pb.ORCHESTRATION_STATUS_PENDING


def test_skip_graceful_termination_terminates_at_once(stub: HubStub) -> None:
    done = _run_to_completion(stub, "Other")
    running = start(stub)
    in_flight = WorkStream(stub).next()
    batch = pb.InstanceBatch(instanceIds=[running, done, "ghost"])
    response = stub.SkipGracefulOrchestrationTerminations(
        pb.SkipGracefulOrchestrationTerminationsRequest(instanceBatch=batch, reason=sv('"now"'))
    )
    assert sorted(response.unterminatedInstanceIds) == sorted([done, "ghost"])
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=running, getInputsAndOutputs=True)).orchestrationState
    assert state.orchestrationStatus == pb.ORCHESTRATION_STATUS_TERMINATED and state.output.value == '"now"'
    # The worker still holding the instance can no longer complete it.
    assert _code(lambda: complete(stub, in_flight, finish(1, '"late"'))) == grpc.StatusCode.FAILED_PRECONDITION
    assert status_of(stub, running) == pb.ORCHESTRATION_STATUS_TERMINATED


def test_replacing_a_running_sub_orchestration_tells_its_parent(stub: HubStub) -> None:
    parent = start(stub, "Parent")
    work = WorkStream(stub)
    create = pb.OrchestratorAction(
        id=5, createSubOrchestration=pb.CreateSubOrchestrationAction(instanceId=parent + "-c", name="Child")
    )
    complete(stub, work.next(), create)
    complete(stub, work.next())  # the child starts and waits
    running_ok = pb.OrchestrationIdReusePolicy(
        replaceableStatus=[pb.ORCHESTRATION_STATUS_RUNNING, pb.ORCHESTRATION_STATUS_TERMINATED]
    )
    start(stub, "Child", instance_id=parent + "-c", orchestrationIdReusePolicy=running_ok)
    items = [work.next(), work.next()]
    to_parent = next(i for i in items if i.orchestratorRequest.instanceId == parent)
    failed = to_parent.orchestratorRequest.newEvents[1].subOrchestrationInstanceFailed
    assert failed.taskScheduledId == 5
    assert failed.failureDetails.errorType == "OrchestrationTerminated"
    assert "replaced" in failed.failureDetails.errorMessage
