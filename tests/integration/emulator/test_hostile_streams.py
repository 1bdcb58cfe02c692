"""Work-item streams under attack: a reader that never reads, and a caller that guesses completion tokens.

Every wait here is bounded far below the 300 s lease timeout, so work that only comes back when its lease
expires makes the test fail instead of passing slowly.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from tests.support.reliability import wait_until

from .conftest import HubStub, WorkStream, finish, start

pytestmark = pytest.mark.adversarial

LEASE_SECONDS = 300.0
STALL_SECONDS = 2.0  # how long a send may wait for a reader here (the default is 10 s)


@pytest.fixture
def server() -> Iterator[EmulatorServer]:
    srv = EmulatorServer(
        port=0,
        in_memory=True,
        task_hubs=("default", "elsewhere"),
        lease_timeout=LEASE_SECONDS,
        health_ping_interval=60.0,
    )
    srv.start()
    srv.dispatcher.stall_timeout = STALL_SECONDS
    yield srv
    srv.close()


@pytest.fixture
def stub(server: EmulatorServer) -> Iterator[HubStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield HubStub(channel, "default")


class DeafReader:
    """Opens GetWorkItems on a channel of its own and never reads a message (its transport still answers pings)."""

    def __init__(self, server: EmulatorServer, request: pb.GetWorkItemsRequest | None = None) -> None:
        self._channel = grpc.insecure_channel(server.address)
        stub = pb_grpc.TaskHubSidecarServiceStub(self._channel)
        self.call = stub.GetWorkItems(request or pb.GetWorkItemsRequest(), metadata=[("taskhub", "default")])

    def close(self) -> None:
        self.call.cancel()
        self._channel.close()


def _leases(server: EmulatorServer) -> int:
    return len(server.dispatcher._leases)


def test_a_stream_that_never_reads_gives_its_work_back_and_a_real_worker_completes_everything(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    runs = 24
    # Inputs large enough that the deaf stream's transport buffers fill (a few MB) before the default limit of
    # work items is reached: its sends then stop finishing.
    payload = "x" * 256_000
    deaf = DeafReader(server)
    try:
        wait_until(lambda: len(server.dispatcher.streams) == 1, 20, "the deaf stream to open")

        def echo_length(ctx: task.OrchestrationContext, data: str) -> int:
            return len(data)

        c = client.TaskHubGrpcClient(host_address=server.address)
        ids = [c.schedule_new_orchestration(echo_length, input=payload, instance_id=f"deaf-{i}") for i in range(runs)]
        wait_until(lambda: _leases(server) > 0, 20, "the deaf stream to take work")
        w = worker.TaskHubGrpcWorker(host_address=server.address)
        w.add_orchestrator(echo_length)
        with caplog.at_level(logging.WARNING, logger="dtscale_emulator"), w:
            w.start()
            for iid in ids:
                state = c.wait_for_orchestration_completion(iid, timeout=90)
                assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, iid
                assert state.get_output() == len(payload)
        c.close()
    finally:
        deaf.close()
    warnings = [r.getMessage() for r in caplog.records if "did not take a work item" in r.getMessage()]
    assert warnings and "go back to the queue" in warnings[0]


def test_a_stream_that_names_no_limit_holds_at_most_the_default_number_of_work_items(
    server: EmulatorServer, stub: HubStub
) -> None:
    deaf = DeafReader(server)
    try:
        wait_until(lambda: len(server.dispatcher.streams) == 1, 20, "the deaf stream to open")
        for i in range(150):  # small: every one of them fits in the transport's buffers
            start(stub, instance_id=f"small-{i}")
        wait_until(
            lambda: _leases(server) >= 100 and server.dispatcher.streams_caught_up(),
            30,
            "the deaf stream to take what it may and wait",
        )
        assert _leases(server) == 100
        # The rest is there for a stream that reads.
        reader = WorkStream(stub)
        assert reader.next(timeout=20).orchestratorRequest.instanceId.startswith("small-")
        reader.cancel()
    finally:
        deaf.close()


def _guesses_from(token: str, around: int = 40) -> list[str]:
    """Tokens a caller would try if tokens were a fixed prefix, a serial number and a batch index (in hex)."""
    prefix, serial = token[:16], int(token[16:28], 16)
    return [
        f"{prefix}{n:012x}{index:04x}"
        for n in range(max(1, serial - around), serial + around)
        for index in range(4)
        if n != serial
    ]


def _pwn(stub: HubStub, token: str) -> grpc.StatusCode | None:
    try:
        stub.CompleteOrchestratorTask(
            pb.OrchestratorResponse(completionToken=token, actions=[finish(0, '"pwned"')]),
        )
    except grpc.RpcError as error:
        return error.code()
    return None


def test_a_caller_cannot_complete_another_workers_turn_by_guessing_its_token(
    server: EmulatorServer, stub: HubStub
) -> None:
    victim_id = start(stub, name="Victim", instance_id=f"victim-{uuid.uuid4().hex[:8]}")
    victim = WorkStream(stub, pb.GetWorkItemsRequest(maxConcurrentOrchestrationWorkItems=1))
    held = victim.next()
    assert held.orchestratorRequest.instanceId == victim_id
    # The attacker: a channel of its own, the same task hub, one work item of its own to learn a token from.
    with grpc.insecure_channel(server.address) as channel:
        attacker = HubStub(channel, "default")
        start(attacker, name="Bait", instance_id=f"bait-{uuid.uuid4().hex[:8]}")
        bait = WorkStream(attacker, pb.GetWorkItemsRequest(maxConcurrentOrchestrationWorkItems=1))
        own = bait.next().completionToken
        assert len(own) >= 32  # at least 128 bits, in hex
        outcomes = {_pwn(attacker, guess) for guess in _guesses_from(own)}
        bait.cancel()
    assert outcomes == {grpc.StatusCode.FAILED_PRECONDITION}
    # The honest completion still lands, with the worker's own output.
    stub.CompleteOrchestratorTask(
        pb.OrchestratorResponse(
            instanceId=victim_id, completionToken=held.completionToken, actions=[finish(0, '"honest"')]
        )
    )
    victim.cancel()
    state = stub.GetInstance(pb.GetInstanceRequest(instanceId=victim_id, getInputsAndOutputs=True))
    assert state.orchestrationState.output.value == '"honest"'


def test_a_completion_from_another_task_hub_is_refused(server: EmulatorServer, stub: HubStub) -> None:
    iid = start(stub, instance_id=f"hub-{uuid.uuid4().hex[:8]}")
    stream = WorkStream(stub)
    token = stream.next().completionToken
    with grpc.insecure_channel(server.address) as channel:
        code = _pwn(HubStub(channel, "elsewhere"), token)
    stream.cancel()
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState.orchestrationStatus in {
        pb.ORCHESTRATION_STATUS_PENDING,
        pb.ORCHESTRATION_STATUS_RUNNING,
    }
