"""Attacks on the emulator's request limits over real gRPC (issue #37, findings 1-5), each kept as a test.

Every client here uses gRPC's default receive limit (4 MiB), as SDK workers and clients do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, timestamp_pb2

from dtscale_emulator.limits import Limits
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask import client
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

from .conftest import HubStub, WorkStream, complete, history, kinds, schedule, start, status_of, sv, uid

pytestmark = pytest.mark.adversarial

KIB, MIB = 1024, 1024 * 1024
FAILED = pb.ORCHESTRATION_STATUS_FAILED
#: A payload just under the 1 MiB limit, as a JSON string.
NEAR_LIMIT = '"' + "x" * (MIB - 100) + '"'


def _refused(call: Callable[[], Any], code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == code, info.value.details()
    return info.value.details() or ""


def _failure(stub: HubStub, iid: str) -> pb.TaskFailureDetails:
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
    assert state.orchestrationStatus == FAILED
    return state.failureDetails


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


# Finding 1: a poison work item ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ({f"k{i}": "v" * 4096 for i in range(1280)}, "tags has 1280 entries; the limit is 64"),
        ({"k": "v" * (5 * MIB)}, "tags['k'] is 5242880 characters; the limit is 4096"),
        ({f"k{i}": "v" * 4000 for i in range(20)}, "tags is 80050 bytes (keys and values, UTF-8); the limit is 65536"),
    ],
)
def test_a_start_with_megabytes_of_tags_is_refused_and_workers_keep_working(
    stub: HubStub, tags: dict[str, str], message: str
) -> None:
    iid = uid("poison")
    assert message in _refused(
        lambda: stub.StartInstance(pb.CreateInstanceRequest(instanceId=iid, name="O", tags=tags))
    )
    assert not stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).exists
    work = WorkStream(stub)
    ordinary = start(stub)
    assert work.next().orchestratorRequest.instanceId == ordinary
    work.cancel()


def test_queued_events_beyond_what_a_worker_receives_wait_for_the_next_work_item(stub: HubStub) -> None:
    """Eight legal events of nearly 1 MiB: no work item carries them all (it would break the worker's stream)."""
    iid = start(stub)
    work = WorkStream(stub, pb.GetWorkItemsRequest(capabilities=[pb.WORKER_CAPABILITY_HISTORY_STREAMING]))
    first = work.next()
    for n in range(8):  # queued while the first turn is out: all of them wait for the next work item
        stub.RaiseEvent(pb.RaiseEventRequest(instanceId=iid, name=f"e{n}", input=sv(NEAR_LIMIT)))
    complete(stub, first)
    received: list[str] = []
    items = 0
    while len(received) < 8:
        item = work.next()  # a work item over 4 MiB would fail this stream with RESOURCE_EXHAUSTED
        assert item.ByteSize() <= 4 * MIB
        received += [e.eventRaised.name for e in item.orchestratorRequest.newEvents if e.HasField("eventRaised")]
        items += 1
        complete(stub, item)
    assert received == [f"e{n}" for n in range(8)]
    assert items >= 3
    work.cancel()


def test_queued_entity_operations_beyond_what_a_worker_receives_wait_for_the_next_batch(stub: HubStub) -> None:
    entity = "@big@queue"
    for n in range(6):
        stub.SignalEntity(
            pb.SignalEntityRequest(instanceId=entity, name="add", input=sv(NEAR_LIMIT), requestId=f"r{n}")
        )
    work = WorkStream(stub)
    done: list[str] = []
    while len(done) < 6:
        item = work.next()  # a batch over 4 MiB would fail this stream with RESOURCE_EXHAUSTED
        assert item.ByteSize() <= 4 * MIB
        batch = item.entityRequestV2.operationRequests
        done += [e.entityOperationSignaled.requestId for e in batch]
        results = [pb.OperationResult(success=pb.OperationResultSuccess()) for _ in batch]
        stub.CompleteEntityTask(pb.EntityBatchResult(completionToken=item.completionToken, results=results))
    assert done == [f"r{n}" for n in range(6)]
    work.cancel()


def test_a_history_a_worker_cannot_receive_fails_the_instance_not_the_stream(stub: HubStub) -> None:
    """A worker that does not stream histories would be sent 4.5 MiB of past events: the instance fails."""
    iid = start(stub)
    work = WorkStream(stub)  # advertises no history streaming
    complete(stub, work.next(), *[schedule(n, "Big", NEAR_LIMIT) for n in range(1, 6)])
    for _ in range(5):
        activity = work.next()
        assert activity.HasField("activityRequest")
        stub.CompleteActivityTask(
            pb.ActivityResponse(
                instanceId=iid, taskId=activity.activityRequest.taskId, completionToken=activity.completionToken
            )
        )
    _wait_until(lambda: status_of(stub, iid) == FAILED, "the instance to fail")
    failure = _failure(stub, iid)
    assert failure.errorType == "WorkItemTooLarge"
    assert "does not stream (requiresHistoryStreaming)" in failure.errorMessage
    assert "a worker receives at most 4194304 bytes" in failure.errorMessage
    # The stream still serves: the next instance reaches it.
    other = start(stub)
    assert work.next().orchestratorRequest.instanceId == other
    work.cancel()


def test_the_largest_state_the_limits_allow_reaches_a_default_client(server: EmulatorServer, stub: HubStub) -> None:
    """Input, output and custom status of nearly 1 MiB each, a failure and tags at their limits: one state still
    fits in what a client receives by default, so reading it cannot fail as it did for the poisoned instance."""
    tags = {f"k{n:02}": "v" * 1000 for n in range(64)}
    iid = start(stub, input=sv(NEAR_LIMIT), tags=tags)
    work = WorkStream(stub)
    failure = pb.TaskFailureDetails(errorType="E", errorMessage="m", stackTrace=sv("s" * (250 * KIB)))
    done = pb.CompleteOrchestrationAction(orchestrationStatus=FAILED, result=sv(NEAR_LIMIT), failureDetails=failure)
    complete(stub, work.next(), pb.OrchestratorAction(id=1, completeOrchestration=done), customStatus=sv(NEAR_LIMIT))
    work.cancel()
    sdk = client.TaskHubGrpcClient(host_address=server.address)
    try:
        state = sdk.get_orchestration_state(iid, fetch_payloads=True)
    finally:
        sdk.close()
    assert state is not None and state.serialized_output == NEAR_LIMIT
    assert state.serialized_custom_status == NEAR_LIMIT and state.serialized_input == NEAR_LIMIT


# Finding 2: unbounded fields -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rpc", "request_", "message"),
    [
        (
            "StartInstance",
            pb.CreateInstanceRequest(name="n" * (50 * MIB)),
            "name is 52428800 characters; the limit is 1024",
        ),
        (
            "StartInstance",
            pb.CreateInstanceRequest(name="n", version=sv("v" * MIB)),
            "version is 1048576 characters; the limit is 256",
        ),
        (
            "StartInstance",
            pb.CreateInstanceRequest(name="n", tags={"k" * MIB: "v"}),
            "tags has a key of 1048576 characters",
        ),
        (
            "StartInstance",
            pb.CreateInstanceRequest(name="n", executionId=sv("e" * 300)),
            "executionId is 300 characters; the limit is 256",
        ),
        (
            "StartInstance",
            pb.CreateInstanceRequest(name="n", parentTraceContext=pb.TraceContext(traceParent="0" * MIB)),
            "parentTraceContext.traceParent is 1048576 characters; the limit is 1024",
        ),
        (
            "RaiseEvent",
            pb.RaiseEventRequest(instanceId="i", name="e" * MIB),
            "name is 1048576 characters; the limit is 1024",
        ),
        (
            "RaiseEvent",
            pb.RaiseEventRequest(instanceId="i" * MIB, name="e"),
            "instanceId is 1048576 characters; the limit is 100",
        ),
        (
            "SignalEntity",
            pb.SignalEntityRequest(instanceId="@c@k", name="o" * MIB),
            "name is 1048576 characters; the limit is 1024",
        ),
        (
            "SuspendInstance",
            pb.SuspendRequest(instanceId="i", reason=sv("r" * 2 * MIB)),
            "reason is 2097152 bytes; the limit is 1048576",
        ),
        (
            "RewindInstance",
            pb.RewindInstanceRequest(instanceId="i", reason=sv("r" * 2 * MIB)),
            "reason is 2097152 bytes",
        ),
        ("GetInstance", pb.GetInstanceRequest(instanceId="i" * 200), "instanceId is 200 characters; the limit is 100"),
    ],
)
def test_fields_over_their_limits_are_refused_naming_field_and_limit(
    stub: HubStub, rpc: str, request_: Any, message: str
) -> None:
    assert message in _refused(lambda: getattr(stub, rpc)(request_, timeout=60))


def test_refused_huge_fields_leave_listings_working(stub: HubStub) -> None:
    for field in ("name", "version"):
        big = {"name": "n" * (10 * MIB)} if field == "name" else {"name": "n", "version": sv("v" * (10 * MIB))}
        _refused(lambda big=big: stub.StartInstance(pb.CreateInstanceRequest(**big), timeout=60))  # type: ignore[misc]
    iid = start(stub)
    page = stub.QueryInstances(pb.QueryInstancesRequest(query=pb.InstanceQuery(fetchInputsAndOutputs=True)))
    assert [s.instanceId for s in page.orchestrationState] == [iid]


def _leased_turn(stub: HubStub, work: WorkStream) -> tuple[str, pb.WorkItem]:
    iid = start(stub)
    item = work.next()
    assert item.orchestratorRequest.instanceId == iid
    return iid, item


@pytest.mark.parametrize(
    ("action", "field", "error_type"),
    [
        (
            pb.OrchestratorAction(id=1, createSubOrchestration=pb.CreateSubOrchestrationAction(name="s" * 2000)),
            "actions[1].createSubOrchestration.name is 2000 characters; the limit is 1024",
            "FieldTooLarge",
        ),
        (
            pb.OrchestratorAction(id=1, scheduleTask=pb.ScheduleTaskAction(name="a", tags={"k": "v" * MIB})),
            "actions[1].scheduleTask.tags['k'] is 1048576 characters; the limit is 4096",
            "FieldTooLarge",
        ),
        (
            pb.OrchestratorAction(
                id=1, sendEvent=pb.SendEventAction(instance=pb.OrchestrationInstance(instanceId="t"), name="e" * MIB)
            ),
            "actions[1].sendEvent.name is 1048576 characters; the limit is 1024",
            "FieldTooLarge",
        ),
        (
            pb.OrchestratorAction(
                id=1, createTimer=pb.CreateTimerAction(fireAt=timestamp_pb2.Timestamp(seconds=2**62))
            ),
            "actions[1].createTimer.fireAt is out of range (seconds=4611686018427387904, nanos=0)",
            "TimestampOutOfRange",
        ),
    ],
)
def test_an_orchestrators_action_over_a_limit_fails_that_orchestration(
    stub: HubStub, action: pb.OrchestratorAction, field: str, error_type: str
) -> None:
    work = WorkStream(stub)
    iid, item = _leased_turn(stub, work)
    assert field in _refused(lambda: complete(stub, item, action))
    failure = _failure(stub, iid)
    assert failure.errorType == error_type and field in failure.errorMessage
    assert work.nothing_for(0.3)  # nothing comes back: the orchestration is done with
    work.cancel()


def test_an_activity_failure_over_the_limit_fails_the_activity_with_a_bounded_one(stub: HubStub) -> None:
    iid = start(stub)
    work = WorkStream(stub)
    complete(stub, work.next(), schedule(1, "Boom"))
    activity = work.next()
    huge = pb.TaskFailureDetails(errorType="ValueError", errorMessage="bad", stackTrace=sv("frame\n" * 200_000))
    response = pb.ActivityResponse(
        instanceId=iid, taskId=1, failureDetails=huge, completionToken=activity.completionToken
    )
    assert "failureDetails is 1200" in _refused(lambda: stub.CompleteActivityTask(response))
    failed = work.next().orchestratorRequest.newEvents[1].taskFailed.failureDetails
    assert failed.errorType == "FieldTooLarge"
    assert failed.errorMessage.startswith("the activity failed (ValueError: bad)")
    assert "the limit is 262144 bytes" in failed.errorMessage
    work.cancel()


# Finding 3: pages bounded by bytes -------------------------------------------------------------------
def test_all_states_with_inputs_of_a_mebibyte_each_come_back_through_a_default_client(server: EmulatorServer) -> None:
    sdk = client.TaskHubGrpcClient(host_address=server.address)
    try:
        ids = {sdk.schedule_new_orchestration("Orch", input="x" * (MIB - 100)) for _ in range(6)}
        states = sdk.get_all_orchestration_states(client.OrchestrationQuery(fetch_inputs_and_outputs=True))
    finally:
        sdk.close()
    assert sorted(s.instance_id for s in states) == sorted(ids)
    assert all(s.serialized_input is not None and len(s.serialized_input) == MIB - 98 for s in states)


def test_a_full_walk_of_large_states_returns_each_once_with_its_input(stub: HubStub) -> None:
    ids = sorted(start(stub, input=sv(NEAR_LIMIT)) for _ in range(14))
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        query = pb.InstanceQuery(maxInstanceCount=100, fetchInputsAndOutputs=True)
        if token is not None:
            query.continuationToken.value = token
        page = stub.QueryInstances(pb.QueryInstancesRequest(query=query))
        assert page.ByteSize() < 4 * MIB
        assert all(s.input.value == NEAR_LIMIT for s in page.orchestrationState)
        seen += [s.instanceId for s in page.orchestrationState]
        pages += 1
        if not page.HasField("continuationToken"):
            break
        token = page.continuationToken.value
    assert seen == ids
    assert pages >= 4


def test_a_walk_of_entities_with_large_states_returns_each_once(stub: HubStub) -> None:
    work = WorkStream(stub)
    entities = sorted(f"@big@k{n}" for n in range(6))
    for entity in entities:
        stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="set", requestId=uid("r")))
        item = work.next()
        stub.CompleteEntityTask(
            pb.EntityBatchResult(
                completionToken=item.completionToken,
                results=[pb.OperationResult(success=pb.OperationResultSuccess())],
                entityState=sv(NEAR_LIMIT),
            )
        )
    work.cancel()
    seen: list[str] = []
    request = pb.QueryEntitiesRequest(query=pb.EntityQuery(includeState=True))
    while True:
        page = stub.QueryEntities(request)
        assert all(e.serializedState.value == NEAR_LIMIT for e in page.entities)
        seen += [e.instanceId for e in page.entities]
        if not page.HasField("continuationToken"):
            break
        request.query.continuationToken.value = page.continuationToken.value
    assert seen == entities


# Finding 4: out-of-range timestamps ------------------------------------------------------------------
BEYOND = timestamp_pb2.Timestamp(seconds=2**62)


@pytest.mark.parametrize(
    ("rpc", "request_", "field"),
    [
        (
            "StartInstance",
            pb.CreateInstanceRequest(name="n", scheduledStartTimestamp=timestamp_pb2.Timestamp(seconds=253402300800)),
            "scheduledStartTimestamp",
        ),
        (
            "StartInstance",
            pb.CreateInstanceRequest(name="n", scheduledStartTimestamp=timestamp_pb2.Timestamp(nanos=-1)),
            "scheduledStartTimestamp",
        ),
        (
            "QueryInstances",
            pb.QueryInstancesRequest(query=pb.InstanceQuery(createdTimeFrom=BEYOND)),
            "query.createdTimeFrom",
        ),
        ("ListInstanceIds", pb.ListInstanceIdsRequest(completedTimeTo=BEYOND), "completedTimeTo"),
        (
            "PurgeInstances",
            pb.PurgeInstancesRequest(purgeInstanceFilter=pb.PurgeInstanceFilter(createdTimeTo=BEYOND)),
            "purgeInstanceFilter.createdTimeTo",
        ),
        ("QueryEntities", pb.QueryEntitiesRequest(query=pb.EntityQuery(lastModifiedTo=BEYOND)), "query.lastModifiedTo"),
        ("SignalEntity", pb.SignalEntityRequest(instanceId="@c@k", name="a", scheduledTime=BEYOND), "scheduledTime"),
    ],
)
def test_out_of_range_timestamps_are_refused_naming_the_field(
    stub: HubStub, rpc: str, request_: Any, field: str
) -> None:
    details = _refused(lambda: getattr(stub, rpc)(request_))
    assert details.startswith(f"{field} is out of range")
    assert "9999-12-31T23:59:59.999999999Z" in details


# Finding 5: one huge turn ----------------------------------------------------------------------------
@pytest.fixture
def capped() -> Iterator[EmulatorServer]:
    srv = EmulatorServer(port=0, in_memory=True, clock=ManualClock(), limits=Limits(max_actions_per_turn=100))
    srv.start()
    yield srv
    srv.close()


def test_a_turn_over_the_action_cap_fails_the_orchestration(capped: EmulatorServer) -> None:
    with grpc.insecure_channel(capped.address) as channel:
        stub = HubStub(channel, "default")
        work = WorkStream(stub)
        iid, item = _leased_turn(stub, work)
        too_many = [schedule(n, "A") for n in range(1, 102)]
        assert "actions holds 101 actions; the limit is 100 per turn" in _refused(
            lambda: complete(stub, item, *too_many)
        )
        assert _failure(stub, iid).errorType == "TooManyActions"
        assert work.nothing_for(0.3)
        # At the cap, a turn is applied.
        other, item = _leased_turn(stub, work)
        complete(stub, item, *too_many[:100])
        assert kinds(history(stub, other)).count("taskScheduled") == 100
        work.cancel()


@pytest.fixture
def quiet() -> Iterator[EmulatorServer]:
    """A server whose idle streams stay idle: no health pings, so nothing but the test touches the store."""
    srv = EmulatorServer(port=0, in_memory=True, clock=ManualClock(), health_ping_interval=3600)
    srv.start()
    yield srv
    srv.close()


class _Watched:
    """The engine's backend, telling when a thread other than the test's opens a transaction."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._test_thread = threading.current_thread()
        self.entered = threading.Event()

    def transaction(self) -> Any:
        if threading.current_thread() is not self._test_thread:
            self.entered.set()
        return self._inner.transaction()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_another_clients_hello_is_served_while_a_large_turn_waits_to_commit(quiet: EmulatorServer) -> None:
    """The turn is held at its commit (the test holds the store); a second client's Hello must still be served.

    Applied on the event loop, the turn kept every other call waiting for as long as its commit took.
    """
    with grpc.insecure_channel(quiet.address) as channel, grpc.insecure_channel(quiet.address) as other:
        stub = HubStub(channel, "default")
        work = WorkStream(stub)
        iid, item = _leased_turn(stub, work)
        _wait_until(quiet.dispatcher.streams_caught_up, "the stream to go idle")
        watched = _Watched(quiet.engine.backend)
        quiet.engine.backend = watched
        actions = [schedule(n, "A") for n in range(1, 2001)]
        response = pb.OrchestratorResponse(instanceId=iid, completionToken=item.completionToken, actions=actions)
        with quiet.backend.transaction():
            pending = stub._stub.CompleteOrchestratorTask.future(
                response, metadata=[("taskhub", "default")], timeout=120
            )
            assert watched.entered.wait(30), "the turn never reached its commit"
            pb_grpc.TaskHubSidecarServiceStub(other).Hello(empty_pb2.Empty(), timeout=20)
            assert not pending.done()  # served while the turn still waited for the store
        pending.result(timeout=120)
        assert kinds(history(stub, iid)).count("taskScheduled") == 2000
        work.cancel()
