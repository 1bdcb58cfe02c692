"""The exact errors users see for bad input: oversized payloads, bad IDs, unknown hubs, names and payloads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker
from durabletask._errors import PayloadTooLargeError, SerializationError
from durabletask._grpc.errors import InvalidArgumentError, NotFoundError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.history import TaskScheduledEvent
from tests.integration.emulator.conftest import HubStub, sv

MIB = 1024 * 1024


def echo(ctx: task.OrchestrationContext, value: Any) -> Any:
    return value


def calls_missing_activity(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_activity("missing_activity", input=1))


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    srv = EmulatorServer(port=0, in_memory=True)
    srv.start()
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def sdk(server: EmulatorServer) -> Iterator[client.TaskHubGrpcClient]:
    w = worker.TaskHubGrpcWorker(host_address=server.address)
    w.add_orchestrator(echo)
    w.add_orchestrator(calls_missing_activity)
    w.start()
    c = client.TaskHubGrpcClient(host_address=server.address)
    yield c
    c.close()
    w.stop()


@pytest.fixture(scope="module")
def raw(server: EmulatorServer) -> Iterator[HubStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield HubStub(channel, "default")


def _raises(call: Callable[[], Any], kind: type[BaseException]) -> str:
    with pytest.raises(kind) as info:
        call()
    return str(info.value)


# What the emulator answers --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("instance_id", "message"),
    [
        ("a" * 101, "StartInstance failed with INVALID_ARGUMENT: instanceId is 101 characters; the limit is 100"),
        (
            "@abc",
            "StartInstance failed with INVALID_ARGUMENT: instanceId must not start with '@' (reserved for entity IDs)",
        ),
        (
            "héllo",
            "StartInstance failed with INVALID_ARGUMENT: instanceId must contain only printable ASCII characters",
        ),
    ],
)
def test_bad_instance_ids_are_refused_by_the_emulator(
    sdk: client.TaskHubGrpcClient, instance_id: str, message: str
) -> None:
    assert (
        _raises(lambda: sdk.schedule_new_orchestration(echo, instance_id=instance_id), InvalidArgumentError) == message
    )


def test_oversized_payload_from_a_raw_caller(raw: HubStub) -> None:
    big = sv("x" * (MIB + 1))
    with pytest.raises(grpc.RpcError) as info:
        raw.StartInstance(pb.CreateInstanceRequest(instanceId="big", name="echo", input=big))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().startswith(f"input is {MIB + 1} bytes; the limit is {MIB} bytes (larger payloads: ")
    assert not raw.GetInstance(pb.GetInstanceRequest(instanceId="big")).exists


def test_oversized_payload_is_stopped_by_the_sdk_first(sdk: client.TaskHubGrpcClient) -> None:
    text = _raises(lambda: sdk.schedule_new_orchestration(echo, input="a" * MIB), PayloadTooLargeError)
    assert text == (
        f"input is {MIB + 2} bytes after serialization, over the limit of {MIB} bytes; "
        "store large data elsewhere and pass a reference"
    )


def test_the_last_instant_a_timestamp_holds_is_stored_and_served_back_exactly(raw: HubStub) -> None:
    # Found by the RPC fuzzer: 9999-12-31T23:59:59.999999999 was stored through float seconds, rounded up to the
    # year 10000, and every later listing of the hub failed with INTERNAL.
    last = pb.CreateInstanceRequest(instanceId="last-instant", name="echo")
    last.scheduledStartTimestamp.seconds, last.scheduledStartTimestamp.nanos = 253402300799, 999999999
    raw.StartInstance(last)
    found = raw.GetInstance(pb.GetInstanceRequest(instanceId="last-instant")).orchestrationState
    assert (found.scheduledStartTimestamp.seconds, found.scheduledStartTimestamp.nanos) == (253402300799, 999999000)
    listed = raw.QueryInstances(pb.QueryInstancesRequest(query=pb.InstanceQuery(instanceIdPrefix=sv("last-"))))
    assert [s.instanceId for s in listed.orchestrationState] == ["last-instant"]
    raw.TerminateInstance(pb.TerminateRequest(instanceId="last-instant"))


def test_unknown_task_hub(server: EmulatorServer) -> None:
    ghost = client.TaskHubGrpcClient(host_address=server.address, metadata=[("taskhub", "ghost")])
    try:
        text = _raises(lambda: ghost.schedule_new_orchestration(echo), NotFoundError)
    finally:
        ghost.close()
    assert text == "StartInstance failed with NOT_FOUND: Task hub not found: ghost"


def test_unknown_instance(sdk: client.TaskHubGrpcClient) -> None:
    text = _raises(lambda: sdk.raise_orchestration_event("nope", "approval"), NotFoundError)
    assert text == "RaiseEvent failed with NOT_FOUND: no orchestration instance with ID 'nope' was found"
    text = _raises(lambda: sdk.terminate_orchestration("nope"), NotFoundError)
    assert text == "TerminateInstance failed with NOT_FOUND: no orchestration instance with ID 'nope' was found"


# What the worker reports ------------------------------------------------------------------------------
def test_unknown_orchestrator_fails_the_instance(sdk: client.TaskHubGrpcClient) -> None:
    iid = sdk.schedule_new_orchestration("missing_orchestrator")
    state = sdk.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    assert state.failure_details is not None
    assert state.failure_details.message == "A 'missing_orchestrator' orchestrator was not registered."
    assert state.failure_details.error_type == "durabletask.worker.OrchestratorNotRegisteredError"


def test_unknown_activity_fails_the_calling_orchestration(sdk: client.TaskHubGrpcClient) -> None:
    iid = sdk.schedule_new_orchestration(calls_missing_activity)
    state = sdk.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    details = state.failure_details
    assert details is not None and details.inner_failure is not None
    # The task number is the scheduling event's ID, read from the history rather than assumed.
    task_id = next(e.event_id for e in sdk.get_orchestration_history(iid) if isinstance(e, TaskScheduledEvent))
    assert details.message == (
        f"{iid}: Activity task #{task_id} failed: Activity function named 'missing_activity' was not registered!"
    )
    assert details.inner_failure.error_type == "durabletask.worker.ActivityNotRegisteredError"


def test_undecodable_input(sdk: client.TaskHubGrpcClient, raw: HubStub) -> None:
    raw.StartInstance(pb.CreateInstanceRequest(instanceId="undecodable", name="echo", input=sv("{not json")))
    state = sdk.wait_for_orchestration_completion("undecodable", timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    assert state.failure_details is not None
    assert state.failure_details.error_type == "durabletask._errors.SerializationError"
    assert state.failure_details.message == (
        "payload is not valid JSON (Expecting property name enclosed in double quotes at position 1)"
    )
    # Reading the payload back through the SDK names the same problem instead of returning garbage.
    assert _raises(state.get_input, SerializationError) == (
        "payload is not valid JSON (Expecting property name enclosed in double quotes at position 1)"
    )


# What the SDK refuses before any call ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (
            lambda c: c.schedule_new_orchestration(echo, instance_id=""),
            ValueError,
            "instance_id must be a non-empty string",
        ),
        (
            lambda c: c.schedule_new_orchestration(echo, instance_id="a\nb"),
            ValueError,
            "instance_id 'a\\nb' contains control characters",
        ),
        (lambda c: c.schedule_new_orchestration(123), TypeError, "orchestrator must be a function or a name, not int"),
        (
            lambda c: c.schedule_new_orchestration(lambda ctx: None),
            ValueError,
            "orchestrator: cannot schedule a lambda by name; pass the registered name instead",
        ),
        (
            lambda c: c.schedule_new_orchestration(echo, tags={"a": 1}),
            TypeError,
            "tags must map str to str; got 'a': 1",
        ),
        (
            lambda c: c.wait_for_orchestration_completion("x", timeout=-1),
            ValueError,
            "timeout must be greater than zero, got -1",
        ),
        (lambda c: c.raise_orchestration_event("x", ""), ValueError, "event_name must be a non-empty string"),
        (lambda c: c.get_orchestration_state(None), TypeError, "instance_id must be a str, not NoneType"),
    ],
)
def test_sdk_call_site_argument_errors(
    sdk: client.TaskHubGrpcClient, call: Callable[[Any], Any], kind: type[BaseException], message: str
) -> None:
    assert _raises(lambda: call(sdk), kind) == message
