"""Property-based fuzzing of every emulator RPC: any message, or any bytes, gets a clear status and never a crash."""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.conftest import fuzz_examples
from tests.integration.emulator.conftest import HubStub, WorkStream, complete, finish, schedule, sv

from .strategies import messages

SERVICE = pb.DESCRIPTOR.services_by_name["TaskHubSidecarService"]
# Hub-level operations would delete the hub the other examples need; they get their own test below.
HUB_RPCS = {"CreateTaskHub", "DeleteTaskHub"}
METHODS = [m for m in SERVICE.methods if m.name not in HUB_RPCS]
# Statuses a well-behaved server may answer malformed input with; INTERNAL or UNKNOWN would mean a crash.
EXPECTED = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.DEADLINE_EXCEEDED,  # waits and streams run into the short deadline the fuzzer sets
}
# Fixed inputs locally, a fresh printed seed and more examples in CI (tests/conftest.py); FUZZ_EXAMPLES
# overrides the local number of examples for an exploratory run.
FUZZ = settings(
    max_examples=fuzz_examples(int(os.environ.get("FUZZ_EXAMPLES", "25"))),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "emulator.db"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[EmulatorServer]:
    srv = EmulatorServer(port=0, db_path=str(db), task_hubs=("default", "canary"), health_ping_interval=0.1)
    srv.start()
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def channel(server: EmulatorServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.address) as ch:
        yield ch


@pytest.fixture(scope="module")
def canary(channel: grpc.Channel) -> str:
    """An instance in another hub that no fuzzed call may touch."""
    stub = HubStub(channel, "canary")
    stub.StartInstance(pb.CreateInstanceRequest(instanceId="canary", name="Orch", input=sv('"keep me"')))
    return "canary"


def _invoke(channel: grpc.Channel, method: Any, request: bytes) -> None:
    path = f"/{SERVICE.name}/{method.name}"
    reply = GetMessageClass(method.output_type).FromString
    metadata = (("taskhub", "default"),)
    if method.server_streaming:
        call = channel.unary_stream(path, request_serializer=None, response_deserializer=reply)
        stream = call(request, timeout=0.3, metadata=metadata)
        try:
            next(iter(stream), None)  # a first item (or the end) is enough; the stream is then cancelled
        finally:
            stream.cancel()  # type: ignore[no-untyped-call]
        return
    channel.unary_unary(path, request_serializer=None, response_deserializer=reply)(
        request, timeout=0.3, metadata=metadata
    )


def _check(channel: grpc.Channel, method: Any, request: bytes) -> None:
    try:
        _invoke(channel, method, request)
    except grpc.RpcError as error:
        code = error.code()
        if code == grpc.StatusCode.CANCELLED and method.server_streaming:
            return
        assert code in EXPECTED, f"{method.name}: {code} {error.details()}"
        assert error.details(), f"{method.name}: {code} without a message"


@pytest.fixture(scope="module")
def existing(channel: grpc.Channel) -> list[str]:
    """Instances in the fuzzed hub, so generated requests also reach code past "not found"."""
    stub = HubStub(channel, "default")
    ids = [f"known-{i}" for i in range(4)]
    for iid in ids:
        stub.StartInstance(pb.CreateInstanceRequest(instanceId=iid, name="Orch", input=sv("1")))
    stub.SignalEntity(pb.SignalEntityRequest(instanceId="@counter@k", name="add", input=sv("1"), requestId="r"))
    return ids


@pytest.mark.parametrize("method", METHODS, ids=[m.name for m in METHODS])
def test_any_well_formed_message(channel: grpc.Channel, canary: str, existing: list[str], method: Any) -> None:
    known = {"instanceId": st.sampled_from([*existing, "@counter@k"]), "name": st.sampled_from(["Orch", "add"])}

    @FUZZ
    @given(request=messages(method.input_type, named=known))
    def run(request: Any) -> None:
        _check(channel, method, request.SerializeToString())

    run()


@pytest.fixture(scope="module")
def work(channel: grpc.Channel) -> Iterator[WorkStream]:
    stream = WorkStream(HubStub(channel, "default"))
    yield stream
    stream.cancel()


def _leased(channel: grpc.Channel, work: WorkStream, instance_id: str) -> pb.WorkItem:
    HubStub(channel, "default").StartInstance(pb.CreateInstanceRequest(instanceId=instance_id, name="Orch"))
    while True:
        item = work.next()
        if item.HasField("orchestratorRequest") and item.orchestratorRequest.instanceId == instance_id:
            return item


_serials = itertools.count()


@FUZZ
@given(response=messages(pb.OrchestratorResponse.DESCRIPTOR))
def test_any_actions_under_a_valid_lease(channel: grpc.Channel, work: WorkStream, response: Any) -> None:
    """Arbitrary orchestrator actions with a real token: applied or refused, never half-applied."""
    iid = f"leased-{next(_serials)}"  # a fresh instance even when hypothesis replays an example
    item = _leased(channel, work, iid)
    response.instanceId, response.completionToken = iid, item.completionToken
    stub = HubStub(channel, "default")
    try:
        stub.CompleteOrchestratorTask(response)
    except grpc.RpcError as error:
        assert error.code() in EXPECTED, f"{error.code()} {error.details()}"
        assert error.details()
    # Whatever happened, the instance is still readable and its history is well-formed: a refused or
    # handed-back episode commits nothing (the instance stays pending), an accepted one starts it once.
    found = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid))
    assert found.exists
    chunks = stub.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId=iid))
    started = [e.WhichOneof("eventType") for chunk in chunks for e in chunk.events].count("executionStarted")
    pending = found.orchestrationState.orchestrationStatus == pb.ORCHESTRATION_STATUS_PENDING
    continued = any(
        a.completeOrchestration.orchestrationStatus == pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW
        for a in response.actions
        if a.HasField("completeOrchestration")
    )
    if continued and not pending:
        # A new execution's history begins with its first turn; until then it may be empty.
        assert started in (0, 1)
    else:
        assert started == (0 if pending else 1)


def _next_of(work: WorkStream, kind: str, key: Callable[[Any], bool]) -> pb.WorkItem:
    while True:
        item = work.next()
        if item.HasField(kind) and key(getattr(item, kind)):
            return item


def _settle(call: Callable[[], Any]) -> None:
    try:
        call()
    except grpc.RpcError as error:
        assert error.code() in EXPECTED, f"{error.code()} {error.details()}"
        assert error.details()


@FUZZ
@given(response=messages(pb.ActivityResponse.DESCRIPTOR))
def test_any_activity_result_under_a_valid_lease(channel: grpc.Channel, work: WorkStream, response: Any) -> None:
    """An arbitrary activity result with a real token: the instance gets exactly one outcome for the task."""
    iid = f"activity-{next(_serials)}"
    stub = HubStub(channel, "default")
    complete(stub, _leased(channel, work, iid), schedule(1, "Step"))
    item = _next_of(work, "activityRequest", lambda r: r.orchestrationInstance.instanceId == iid)
    response.completionToken = item.completionToken
    _settle(lambda: stub.CompleteActivityTask(response))
    after = _next_of(work, "orchestratorRequest", lambda r: r.instanceId == iid)
    outcomes = [
        e for e in after.orchestratorRequest.newEvents if e.HasField("taskCompleted") or e.HasField("taskFailed")
    ]
    # Accepted: one outcome for task 1. Refused: the activity is handed out again instead (no outcome).
    assert len(outcomes) <= 1
    complete(stub, after, finish(2, '"done"'))


@FUZZ
@given(result=messages(pb.EntityBatchResult.DESCRIPTOR))
def test_any_entity_batch_result_under_a_valid_lease(channel: grpc.Channel, work: WorkStream, result: Any) -> None:
    """An arbitrary entity batch result with a real token: stored or refused, and the entity stays readable."""
    entity = f"@fuzzed@k{next(_serials)}"
    stub = HubStub(channel, "default")
    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="add", input=sv("1"), requestId="r"))
    item = _next_of(work, "entityRequestV2", lambda r: r.instanceId == entity)
    result.completionToken = item.completionToken
    _settle(lambda: stub.CompleteEntityTask(result))
    stub.GetEntity(pb.GetEntityRequest(instanceId=entity, includeState=True))


@pytest.mark.parametrize("method", METHODS, ids=[m.name for m in METHODS])
@FUZZ
@given(raw=st.binary(max_size=64))
def test_any_bytes(channel: grpc.Channel, canary: str, method: Any, raw: bytes) -> None:
    try:
        _invoke(channel, method, raw)
    except grpc.RpcError as error:
        # Bytes that are not the request message are refused naming the message type.
        if error.code() == grpc.StatusCode.INVALID_ARGUMENT and "is not a valid" in (error.details() or ""):
            assert method.input_type.full_name in (error.details() or "")
        elif not (error.code() == grpc.StatusCode.CANCELLED and method.server_streaming):
            assert error.code() in EXPECTED, f"{method.name}: {error.code()} {error.details()}"


def test_hub_operations_with_odd_hub_names(channel: grpc.Channel) -> None:
    for name in ["", "a" * 300, "é", "@", "fuzz-hub"]:
        stub = HubStub(channel, name)
        with contextlib.suppress(grpc.RpcError):
            stub.CreateTaskHub(pb.CreateTaskHubRequest(recreateIfExists=True))
        with contextlib.suppress(grpc.RpcError):
            stub.DeleteTaskHub(pb.DeleteTaskHubRequest())


# Bytes that are not a valid message of any request type (a truncated field, a bad wire type, a huge
# length), plus the empty message: what the burst below sends to every method.
_GARBAGE = [b"", b"\x0a", b"\x0f\xff\xff", b"\x0a\xff\xff\xff\xff\x0f" + b"x" * 8, bytes(range(32))]


def test_server_and_store_survive_a_burst_of_bad_calls(
    server: EmulatorServer, channel: grpc.Channel, work: WorkStream, canary: str, db: Path
) -> None:
    """After bad calls to every method (its own, and any fuzzing that ran before it in this module): the
    server still works, the canary is intact, the database is consistent. It depends on no test order."""
    for method in METHODS:
        for raw in _GARBAGE:
            with contextlib.suppress(grpc.RpcError):
                _invoke(channel, method, raw)
    stub = HubStub(channel, "canary")
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=canary, getInputsAndOutputs=True)).orchestrationState
    assert state.name == "Orch" and state.input.value == '"keep me"'
    fresh = HubStub(channel, "default")
    fresh.CreateTaskHub(pb.CreateTaskHubRequest())
    fresh.StartInstance(pb.CreateInstanceRequest(instanceId="after-fuzz", name="Orch"))
    item = work.next()
    while item.orchestratorRequest.instanceId != "after-fuzz":
        item = work.next()
    complete(fresh, item, finish(0, '"done"'))
    done = fresh.GetInstance(pb.GetInstanceRequest(instanceId="after-fuzz", getInputsAndOutputs=True))
    assert done.orchestrationState.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
