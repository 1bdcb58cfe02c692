"""Fuzzing the request limits: a field past its limit, in any RPC or orchestrator action that carries it, is
refused with INVALID_ARGUMENT naming the field and the limit (an action's also fails its orchestration)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings

from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.conftest import fuzz_examples
from tests.integration.emulator.conftest import HubStub, WorkStream

from .strategies import OVER_LIMIT, OverLimit, set_path

pytestmark = pytest.mark.adversarial

FUZZ = settings(
    max_examples=fuzz_examples(int(os.environ.get("FUZZ_EXAMPLES", "25"))),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# (RPC, a valid request, the path of a limited field in it, the kind of limit that field has)
TARGETS: list[tuple[str, Callable[[], Any], str, str]] = [
    ("StartInstance", lambda: pb.CreateInstanceRequest(name="Orch"), "name", "name"),
    ("StartInstance", lambda: pb.CreateInstanceRequest(name="Orch"), "instanceId", "instance_id"),
    ("StartInstance", lambda: pb.CreateInstanceRequest(name="Orch"), "version", "version"),
    ("StartInstance", lambda: pb.CreateInstanceRequest(name="Orch"), "executionId", "key"),
    ("StartInstance", lambda: pb.CreateInstanceRequest(name="Orch"), "tags", "tags"),
    ("StartInstance", lambda: pb.CreateInstanceRequest(name="Orch"), "scheduledStartTimestamp", "timestamp"),
    ("StartInstance", lambda: pb.CreateInstanceRequest(name="Orch"), "parentTraceContext.traceParent", "trace"),
    ("RaiseEvent", lambda: pb.RaiseEventRequest(instanceId="known", name="e"), "name", "name"),
    ("RaiseEvent", lambda: pb.RaiseEventRequest(instanceId="known", name="e"), "instanceId", "instance_id"),
    ("TerminateInstance", lambda: pb.TerminateRequest(instanceId="known"), "instanceId", "instance_id"),
    ("GetInstance", lambda: pb.GetInstanceRequest(instanceId="known"), "instanceId", "instance_id"),
    ("SignalEntity", lambda: pb.SignalEntityRequest(instanceId="@c@k", name="add"), "name", "name"),
    ("SignalEntity", lambda: pb.SignalEntityRequest(instanceId="@c@k", name="add"), "requestId", "key"),
    ("SignalEntity", lambda: pb.SignalEntityRequest(instanceId="@c@k", name="add"), "scheduledTime", "timestamp"),
    ("QueryInstances", lambda: pb.QueryInstancesRequest(query=pb.InstanceQuery()), "query.createdTimeTo", "timestamp"),
    ("ListInstanceIds", lambda: pb.ListInstanceIdsRequest(), "completedTimeFrom", "timestamp"),
    (
        "PurgeInstances",
        lambda: pb.PurgeInstancesRequest(purgeInstanceFilter=pb.PurgeInstanceFilter()),
        "purgeInstanceFilter.createdTimeFrom",
        "timestamp",
    ),
    ("QueryEntities", lambda: pb.QueryEntitiesRequest(query=pb.EntityQuery()), "query.lastModifiedFrom", "timestamp"),
]


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    srv = EmulatorServer(port=0, in_memory=True, health_ping_interval=0.1)
    srv.start()
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def stub(server: EmulatorServer) -> Iterator[HubStub]:
    with grpc.insecure_channel(server.address) as channel:
        hub = HubStub(channel, "default")
        hub.StartInstance(pb.CreateInstanceRequest(instanceId="known", name="Orch"))
        yield hub


def _refusal(call: Callable[[], Any]) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    return info.value.details() or ""


@pytest.mark.parametrize(("rpc", "build", "path", "kind"), TARGETS, ids=[f"{t[0]}-{t[2]}" for t in TARGETS])
def test_a_client_request_field_past_its_limit_is_refused_naming_it(
    stub: HubStub, rpc: str, build: Callable[[], Any], path: str, kind: str
) -> None:
    @FUZZ
    @given(over=OVER_LIMIT[kind])
    def run(over: OverLimit) -> None:
        value, limit_text = over
        request = build()
        set_path(request, path, value)
        details = _refusal(lambda: getattr(stub, rpc)(request))
        assert details.startswith(path) and limit_text in details, details

    run()


# Orchestrator actions: the path of a limited field in each action kind, and its kind of limit.
ACTIONS: list[tuple[str, str, str]] = [
    ("scheduleTask", "name", "name"),
    ("scheduleTask", "version", "version"),
    ("scheduleTask", "tags", "tags"),
    ("scheduleTask", "parentTraceContext.traceState", "trace"),
    ("createSubOrchestration", "name", "name"),
    ("createSubOrchestration", "instanceId", "instance_id"),
    ("createSubOrchestration", "tags", "tags"),
    ("createTimer", "fireAt", "timestamp"),
    ("sendEvent", "name", "name"),
    ("sendEvent", "instance.instanceId", "instance_id"),
    ("completeOrchestration", "newVersion", "version"),
    ("completeOrchestration", "tags", "tags"),
    ("terminateOrchestration", "instanceId", "instance_id"),
]
_serials = itertools.count()


@pytest.fixture(scope="module")
def work(stub: HubStub) -> Iterator[WorkStream]:
    stream = WorkStream(stub)
    yield stream
    stream.cancel()


@pytest.mark.parametrize(("kind", "path", "limit"), ACTIONS, ids=[f"{a[0]}-{a[1]}" for a in ACTIONS])
def test_an_action_field_past_its_limit_fails_the_orchestration_naming_it(
    stub: HubStub, work: WorkStream, kind: str, path: str, limit: str
) -> None:
    @FUZZ
    @given(over=OVER_LIMIT[limit])
    def run(over: OverLimit) -> None:
        value, limit_text = over
        iid = f"limits-{next(_serials)}"
        stub.StartInstance(pb.CreateInstanceRequest(instanceId=iid, name="Orch"))
        item = work.next()
        while item.orchestratorRequest.instanceId != iid:
            item = work.next()
        action = pb.OrchestratorAction(id=1)
        body = getattr(action, kind)
        if kind == "completeOrchestration":  # a continue-as-new: where a new version and tags apply
            body.orchestrationStatus = pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW
        body.SetInParent()
        set_path(body, path, value)
        response = pb.OrchestratorResponse(instanceId=iid, completionToken=item.completionToken, actions=[action])
        details = _refusal(lambda: stub.CompleteOrchestratorTask(response))
        assert details.startswith(f"actions[1].{kind}.{path}") and limit_text in details, details
        state = stub.GetInstance(pb.GetInstanceRequest(instanceId=iid, getInputsAndOutputs=True)).orchestrationState
        assert state.orchestrationStatus == pb.ORCHESTRATION_STATUS_FAILED
        assert f"actions[1].{kind}.{path}" in state.failureDetails.errorMessage

    run()
