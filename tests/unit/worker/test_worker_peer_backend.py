"""Our worker against Microsoft's in-memory backend (run by the interop peer in a subprocess).

Driven with raw stubs so that only the worker under test is ours; skipped when the peer is missing.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import wrappers_pb2

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.grpc_options import GrpcWorkerResiliencyOptions
from durabletask.worker import (
    TaskHubGrpcWorker,
    VersionFailureStrategy,
    VersioningOptions,
    VersionMatchStrategy,
)

pytestmark = pytest.mark.interop

_BACKEND_SCRIPT = (
    "import sys\n"
    "from durabletask.testing import create_test_backend\n"
    "backend = create_test_backend(port=int(sys.argv[1]))\n"
    "sys.stdin.read()\n"  # serve until the test closes our stdin
    "backend.stop()\n"
)
WAIT = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def peer_address(peer_py: Path) -> Iterator[str]:
    port = _free_port()
    # The peer must import Microsoft's package, never this repository's.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.Popen(
        [str(peer_py), "-c", _BACKEND_SCRIPT, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
    )
    address = f"localhost:{port}"
    try:
        with grpc.insecure_channel(address) as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=WAIT)
            except grpc.FutureTimeoutError:
                pytest.fail(f"the peer backend did not start (exit code {proc.poll()})")
        yield address
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- the application under test --------------------------------------------------------------------
def add_suffix(ctx: task.ActivityContext, text: str) -> str:
    return f"{text}>{ctx.task_id}"


async def square(ctx: task.ActivityContext, value: int) -> int:
    return value * value


def refuse(ctx: task.ActivityContext, value: Any) -> None:
    raise PermissionError(f"not allowed: {value}")


def chain(ctx: task.OrchestrationContext, text: str) -> Any:
    for _ in range(3):
        text = yield ctx.call_activity(add_suffix, input=text)
    return text


def fan_out(ctx: task.OrchestrationContext, count: int) -> Any:
    results = yield task.when_all([ctx.call_activity(square, input=i) for i in range(1, count + 1)])
    return sum(results)


def failing(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.call_activity(refuse, input="x")


class Driver:
    """Starts our workers against the peer backend and runs orchestrations through raw stubs."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.workers: list[TaskHubGrpcWorker] = []
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.TaskHubSidecarServiceStub(self.channel)

    def start_worker(self, versioning: VersioningOptions | None = None) -> TaskHubGrpcWorker:
        worker = TaskHubGrpcWorker(
            host_address=self.address,
            logger=logging.getLogger("durabletask-worker-tests"),
            resiliency_options=GrpcWorkerResiliencyOptions(reconnect_backoff_base_seconds=0.05),
        )
        for orchestrator in (chain, fan_out, failing):
            worker.add_orchestrator(orchestrator)
        for activity in (add_suffix, square, refuse):
            worker.add_activity(activity)
        if versioning is not None:
            worker.use_versioning(versioning)
        worker.start()
        self.workers.append(worker)
        return worker

    def run(self, name: str, payload: Any, version: str | None = None) -> pb.OrchestrationState:
        instance_id = f"{name}-{uuid.uuid4().hex[:8]}"
        request = pb.CreateInstanceRequest(
            instanceId=instance_id, name=name, input=wrappers_pb2.StringValue(value=json.dumps(payload))
        )
        if version is not None:
            request.version.CopyFrom(wrappers_pb2.StringValue(value=version))
        self.stub.StartInstance(request, timeout=WAIT)
        response = self.stub.WaitForInstanceCompletion(
            pb.GetInstanceRequest(instanceId=instance_id, getInputsAndOutputs=True), timeout=WAIT
        )
        return response.orchestrationState

    def close(self) -> None:
        for worker in self.workers:
            worker.stop(grace_period=5)
        self.channel.close()


@pytest.fixture
def driver(peer_address: str) -> Iterator[Driver]:
    made = Driver(peer_address)
    yield made
    made.close()


def test_chain_of_activities(driver: Driver) -> None:
    driver.start_worker()
    state = driver.run("chain", "a")
    assert state.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED, state.failureDetails
    assert json.loads(state.output.value) == "a>1>2>3"  # each activity sees its sequence ID, numbered from 1


def test_fan_out_with_async_activities(driver: Driver) -> None:
    driver.start_worker()
    state = driver.run("fan_out", 6)
    assert state.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED, state.failureDetails
    assert json.loads(state.output.value) == sum(i * i for i in range(1, 7))


def test_activity_failure_fails_the_orchestration(driver: Driver) -> None:
    driver.start_worker()
    state = driver.run("failing", None)
    assert state.orchestrationStatus == pb.ORCHESTRATION_STATUS_FAILED
    assert "not allowed: x" in state.failureDetails.errorMessage


def test_version_mismatch_fails_the_orchestration(driver: Driver) -> None:
    driver.start_worker(
        VersioningOptions(
            version="2.0", match_strategy=VersionMatchStrategy.STRICT, failure_strategy=VersionFailureStrategy.FAIL
        )
    )
    state = driver.run("chain", "v", version="1.0")
    assert state.orchestrationStatus == pb.ORCHESTRATION_STATUS_FAILED
    assert state.failureDetails.errorType == "VersionMismatch"
    accepted = driver.run("chain", "v", version="2.0")
    assert accepted.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED
