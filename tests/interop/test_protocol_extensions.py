"""Our private protocol extension (the extended-sessions capability) leaves peers that do not know it unaffected.

Microsoft's SDK on our emulator never sends it and gets the published behaviour (every work item carries the full
history); our worker sends it to Microsoft's backend, which ignores it, and works as usual. A positive control
shows that the recorder below does see the capability when a worker sends it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dtscale_emulator.dispatch import dispatcher
from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._protocol_extensions import EXTENDED_SESSIONS_CAPABILITY

from .conftest import run_in_peer
from .test_conformance import EXPECTED

pytestmark = [
    pytest.mark.interop,
    pytest.mark.local_only("records the streams of an emulator of its own and uses Microsoft's in-memory backend"),
]


class Recorder:
    """An emulator in-process, recording the capabilities of every work-item stream that connects."""

    def __init__(self, server: EmulatorServer) -> None:
        self.server = server
        self.capabilities: list[list[int]] = []

    @property
    def address(self) -> str:
        return f"localhost:{self.server.port}"


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    rec = Recorder(server)
    advertised = dispatcher.advertised

    def recording(request: pb.GetWorkItemsRequest) -> tuple[bool, bool]:
        rec.capabilities.append(list(request.capabilities))
        return advertised(request)

    monkeypatch.setattr(dispatcher, "advertised", recording)
    server.start()
    yield rec
    server.stop()


def add_one(ctx: task.ActivityContext, value: int) -> int:
    return value + 1


def three_steps(ctx: task.OrchestrationContext, value: int) -> Any:
    for _ in range(3):
        value = yield ctx.call_activity(add_one, input=value)
    return value


def run_three_steps(address: str) -> client.OrchestrationState | None:
    with worker.TaskHubGrpcWorker(host_address=address) as w, client.TaskHubGrpcClient(host_address=address) as c:
        w.add_orchestrator(three_steps)
        w.add_activity(add_one)
        w.start()
        assert EXTENDED_SESSIONS_CAPABILITY in w._work_items_request().capabilities  # sent by default
        instance_id = c.schedule_new_orchestration(three_steps, input=1)
        return c.wait_for_orchestration_completion(instance_id, timeout=60)


def test_the_capability_is_not_a_published_worker_capability() -> None:
    # tests/interop/test_wire_contract.py shows our enum equals Microsoft's, so this holds for theirs too.
    assert EXTENDED_SESSIONS_CAPABILITY not in pb.WorkerCapability.values()


def test_microsoft_sdk_on_our_emulator_never_sends_it_and_gets_full_histories(
    peer_py: Path, recorder: Recorder
) -> None:
    result = run_in_peer(peer_py, "dts", f"http://{recorder.address}", "chaining")
    assert result == EXPECTED["chaining"]
    assert recorder.capabilities, "the peer's worker never opened a work-item stream"
    assert all(EXTENDED_SESSIONS_CAPABILITY not in sent for sent in recorder.capabilities)
    assert recorder.server.engine.continued_sessions == 0  # no work item left its past events out


def test_our_worker_on_our_emulator_sends_it_and_continues_sessions(recorder: Recorder) -> None:
    # The positive control for the test above: the same recorder sees the capability when it is sent.
    state = run_three_steps(recorder.address)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert state.serialized_output == "4"
    assert any(EXTENDED_SESSIONS_CAPABILITY in sent for sent in recorder.capabilities)
    assert recorder.server.engine.continued_sessions > 0


def test_our_worker_on_a_backend_that_ignores_it_works(official_backend_port: int) -> None:
    # Microsoft's in-memory backend does not know the capability and always sends full histories.
    state = run_three_steps(f"localhost:{official_backend_port}")
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert state.serialized_output == "4"
