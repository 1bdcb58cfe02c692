"""The compatible package's scheduler client and worker send the same header names as ours.

Runs the compatible package in its own interpreter (``DTS_PEER_PYTHON``) against a recording server;
skips when it is not installed.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from durabletask.azuremanaged.client import DurableTaskSchedulerClient
from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker
from tests.conftest import peer_python

from ._fakes import FakeCredential, RecordingServer, start_recording_server

pytestmark = pytest.mark.interop

PEER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from azure.core.credentials import AccessToken
    from durabletask.azuremanaged.client import DurableTaskSchedulerClient
    from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

    class Credential:
        def get_token(self, *scopes, **kwargs):
            print("scope", *scopes)
            return AccessToken("peer-token", int(time.time()) + 3600)

    address = sys.argv[1]
    client = DurableTaskSchedulerClient(host_address=address, taskhub="hub", token_credential=Credential())
    client.get_orchestration_state("x")
    client.close()
    worker = DurableTaskSchedulerWorker(host_address=address, taskhub="hub", token_credential=Credential())
    worker.start()
    sys.stdin.readline()  # the test writes a line once the worker's stream has reached the server
    worker.stop()
    """
)


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recorder = start_recording_server()
    yield recorder
    assert recorder.server is not None
    recorder.server.stop(None)


def _start_peer(python: Path, address: str, workdir: Path) -> subprocess.Popen[str]:
    # Outside the repository and without PYTHONPATH, so the peer imports its own package, not ours.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.Popen(
        [str(python), "-c", PEER_SCRIPT, address],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=workdir,
        env=env,
    )


def _shape(headers: dict[str, str]) -> set[str]:
    # gRPC's own transport user agent differs between versions and is not the scheduler's business.
    return {key for key in headers if key != "user-agent"}


def test_same_header_names_and_scope_as_the_compatible_package(server: RecordingServer, tmp_path: Path) -> None:
    python = peer_python()
    if python is None:
        pytest.skip("the compatible package's interpreter is not installed")
    address = f"http://127.0.0.1:{server.port}"
    peer = _start_peer(python, address, tmp_path)
    try:
        peer_client = server.wait_for("GetInstance", timeout=60)
        peer_worker = server.wait_for("GetWorkItems", timeout=60)
        output, errors = peer.communicate("stop\n", timeout=60)
    finally:
        peer.kill()
        peer.wait()
    assert peer.returncode == 0, errors
    server.reset()

    credential = FakeCredential(time.time)
    client = DurableTaskSchedulerClient(host_address=address, taskhub="hub", token_credential=credential)
    client.get_orchestration_state("x")
    client.close()
    worker = DurableTaskSchedulerWorker(host_address=address, taskhub="hub", token_credential=credential)
    worker.start()
    try:
        our_worker = server.wait_for("GetWorkItems")
    finally:
        worker.stop()
    our_client = server.wait_for("GetInstance")

    assert _shape(our_client) == _shape(peer_client)
    assert _shape(our_worker) == _shape(peer_worker)
    assert peer_client["taskhub"] == our_client["taskhub"] == "hub"
    assert peer_client["authorization"] == "Bearer peer-token"
    assert peer_worker["workerid"].count(":") == our_worker["workerid"].count(":") >= 2
    assert f"scope {credential.scopes[0][0]}" in output
