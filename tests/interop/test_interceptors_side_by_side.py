"""The interceptor classes applications use (``peer_scripts/interceptor_probes.py``), under both SDKs.

Each SDK runs in a fresh process against a recording gRPC server in this process: metadata interceptors (a
subclass of ``DefaultClientInterceptorImpl``, one overriding ``_intercept_call``, the scheduler's), given to a
client or a worker with ``interceptors=``; the resiliency interceptors on a channel of the application's own.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.unit.azuremanaged._fakes import RecordingServer, start_recording_server

from . import probes
from .conftest import ROOT, our_env, peer_env

pytestmark = [pytest.mark.interop, pytest.mark.local_only("a recording server and closed ports of its own")]

SCRIPT = probes.PEER_SCRIPTS / "interceptor_probes.py"
side_by_side = partial(probes.side_by_side, SCRIPT)


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recorder = start_recording_server()
    yield recorder
    assert recorder.server is not None
    recorder.server.stop(None)


@pytest.fixture
def dead_address() -> str:
    with socket.socket() as probe:  # bound, then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture
def silent_address() -> Iterator[str]:
    # Accepts connections and never speaks HTTP/2: every call waits there until its deadline.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def _calls(server: RecordingServer) -> list[list[tuple[str, str]]]:
    # Headers in wire order; gRPC's own transport user agent differs between versions and is left out.
    return [[(k, v) for k, v in headers.items() if k != "user-agent"] for _, headers in server.calls]


def test_resiliency_interceptors_count_failures_and_ask_for_a_new_channel(
    peer_py: Path, dead_address: str, silent_address: str, server: RecordingServer
) -> None:
    live = f"127.0.0.1:{server.port}"
    theirs, ours = side_by_side(peer_py, "resiliency", dead_address, live, silent_address)
    assert ours["tracker"] == theirs["tracker"]
    # [call, outcome, consecutive failures, times on_recreate was called]: a success resets the count, a deadline
    # counts except on a long poll, the threshold (2) asks for a new channel on every failure from there on.
    assert ours["sync"] == theirs["sync"] == [
        ["GetInstance", "UNAVAILABLE", 1, 0],
        ["GetInstance", "UNAVAILABLE", 2, 1],
        ["GetInstance", "UNAVAILABLE", 3, 2],
        ["GetInstance", "OK", 0, 2],
        ["GetInstance", "DEADLINE_EXCEEDED", 1, 2],
        ["WaitForInstanceCompletion", "DEADLINE_EXCEEDED", 0, 2],
        ["GetInstance", "UNAVAILABLE", 1, 2],
    ]
    assert ours["client"] == theirs["client"] == {"saw_failures": True}
    # Microsoft's asyncio interceptor reads the outcome before the call is done, so it never counts a failure
    # (docs/conformance.md); ours counts as the sync one does, also inside the asyncio client.
    assert theirs["async"] == [["GetInstance", "UNAVAILABLE", 0, 0]] * 3 + [["GetInstance", "OK", 0, 0]]
    assert ours["async"] == [
        ["GetInstance", "UNAVAILABLE", 1, 0],
        ["GetInstance", "UNAVAILABLE", 2, 1],
        ["GetInstance", "UNAVAILABLE", 3, 2],
        ["GetInstance", "OK", 0, 2],
    ]
    assert (theirs["async_client"], ours["async_client"]) == (False, True)


def _run_metadata(python: Path | str, env: dict[str, str], cwd: str, server: RecordingServer) -> Any:
    server.reset()
    result = probes.probe(SCRIPT, python, env, cwd, "metadata", f"127.0.0.1:{server.port}")
    return result, _calls(server)


def test_metadata_interceptors_and_their_subclasses_send_their_headers(peer_py: Path, server: RecordingServer) -> None:
    theirs, their_calls = _run_metadata(peer_py, peer_env(), "/", server)
    ours, our_calls = _run_metadata(sys.executable, our_env(), str(ROOT), server)
    assert ours["isinstance"] == theirs["isinstance"] == [True] * 4
    expected = [
        [("probe", "subclass"), ("x-team", "ops")],
        [("probe", "subclass"), ("x-team", "ops")],
        [("probe", "per-call"), ("x-call", "1")],
        [("probe", "per-call"), ("x-call", "2")],
        [("probe", "mutated-list"), ("x-late", "1")],  # the list given is kept, not copied
        [("probe", "none")],
    ]
    assert their_calls[:6] == our_calls[:6] == expected
    # The scheduler interceptor on a plain client: the same headers, the metadata interceptor's last. Our
    # user agent names our distribution (docs/conformance.md).
    (their_dts,), (our_dts,) = their_calls[6:], our_calls[6:]
    assert [k for k, _ in our_dts] == [k for k, _ in their_dts] == [
        "taskhub", "x-user-agent", "workerid", "authorization", "probe"]  # fmt: skip
    assert dict(their_dts)["x-user-agent"].startswith("durabletask-python/")
    assert dict(our_dts)["x-user-agent"].startswith("dtscale/")
    assert {k: v for k, v in our_dts if k != "x-user-agent"} == {k: v for k, v in their_dts if k != "x-user-agent"}
    assert ours["dts"]["is_default"] and theirs["dts"]["is_default"]
    assert ours["dts"]["async_kinds"] == theirs["dts"]["async_kinds"] == [True, True]
    # An empty task hub: Microsoft's interceptor takes it (its scheduler client refuses it); ours refuses it.
    assert (theirs["dts"]["empty_taskhub"], ours["dts"]["empty_taskhub"]) == ("accepted", "ValueError")


def _worker_headers(python: Path | str, env: dict[str, str], cwd: str, server: RecordingServer) -> dict[str, str]:
    server.reset()
    proc = subprocess.Popen(
        [str(python), str(SCRIPT), "worker", f"127.0.0.1:{server.port}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
    )  # fmt: skip
    try:
        headers = server.wait_for("GetWorkItems", timeout=60)
    finally:
        _, err = proc.communicate("stop\n", timeout=60)
    assert proc.returncode == 0, err[-3000:]
    return {k: v for k, v in headers.items() if k != "user-agent"}


def test_a_workers_interceptor_subclass_sends_its_headers(peer_py: Path, server: RecordingServer) -> None:
    theirs = _worker_headers(peer_py, peer_env(), "/", server)
    ours = _worker_headers(sys.executable, our_env(), str(ROOT), server)
    assert list(ours.items()) == list(theirs.items()) == [("probe", "worker"), ("x-team", "ops"), ("x-meta", "1")]
