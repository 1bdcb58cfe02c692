"""Races between a stream ending and a completion for work that stream handed out.

Regression: a completion applied after its stream ended used to leave an extended-session mark for
the dead stream, so every other stream skipped the instance forever.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._protocol_extensions import EXTENDED_SESSIONS_CAPABILITY
from tests.integration.emulator.conftest import HubStub, WorkStream, complete, schedule, sv


@pytest.fixture
def server() -> Iterator[EmulatorServer]:
    srv = EmulatorServer(port=0, in_memory=True, health_ping_interval=0.2)
    srv.start()
    yield srv
    srv.close()


def test_instance_is_not_stranded_when_its_stream_ends_during_completion(server: EmulatorServer) -> None:
    faults = server.faults
    original = server.engine.complete_orchestration

    def cut_after_commit(*args: Any, **kwargs: Any) -> Any:
        # The stream that handed out the work item goes away after the episode is stored but before
        # the dispatcher has finished with the completion. Handlers run on one event loop, so nothing
        # else can run in that gap: the stream's ending (what its handler does when cut) is played here.
        result = original(*args, **kwargs)
        for stream in list({id(lease.stream): lease.stream for lease in server.dispatcher._leases.values()}.values()):
            server.dispatcher._drop_stream(stream)
        faults.cut_streams()
        return result

    with grpc.insecure_channel(server.address) as channel:
        stub = HubStub(channel, "default")
        sessions = pb.GetWorkItemsRequest(capabilities=[EXTENDED_SESSIONS_CAPABILITY])  # type: ignore[list-item]
        first = WorkStream(stub, sessions)
        stub.StartInstance(pb.CreateInstanceRequest(instanceId="stranded", name="Orch", input=sv("1")))
        item = first.next()
        server.engine.complete_orchestration = cut_after_commit  # type: ignore[method-assign]
        try:
            complete(stub, item, schedule(0, "Step"))
        finally:
            server.engine.complete_orchestration = original  # type: ignore[method-assign]

        assert _wait_closed(faults)
        second = WorkStream(stub, sessions)
        activity = second.next()
        assert activity.activityRequest.name == "Step"
        stub.CompleteActivityTask(
            pb.ActivityResponse(
                instanceId="stranded",
                taskId=activity.activityRequest.taskId,
                result=sv('"ok"'),
                completionToken=activity.completionToken,
            )
        )
        # The activity result makes new orchestration work, which the live stream must receive.
        follow_up = second.next(timeout=3)
        second.cancel()
    assert follow_up.orchestratorRequest.instanceId == "stranded"


def _wait_closed(faults: Any) -> bool:
    from tests.support.reliability import wait_until

    wait_until(lambda: faults.open_streams == 0, 10, "the cut stream to close")
    return True
