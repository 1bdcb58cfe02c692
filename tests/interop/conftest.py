"""Interop fixtures: our emulator in-process, Microsoft's in-memory backend in a subprocess, and scenario launchers.

One backend per direction per session; scenarios isolate themselves with unique task hubs and instance IDs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import runners

ROOT = Path(__file__).resolve().parents[2]
PEER_TIMEOUT = 90


def peer_env() -> dict[str, str]:
    """The environment for the peer: without PYTHONPATH, so it imports its own ``durabletask`` and never ours."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def our_env() -> dict[str, str]:
    """The environment for worker processes running our SDK."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="session")
def emulator_port() -> Iterator[int]:
    from emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server.port
    server.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_listening(port: int, proc: subprocess.Popen[str], seconds: float) -> None:
    # The subprocess gives no readiness signal of its own; a bounded connect loop is the only way to know.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the official backend exited with {proc.returncode}")
        try:
            with socket.create_connection(("localhost", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the official backend did not listen on port {port} within {seconds}s")


_BACKEND = (
    "import sys\n"
    "from durabletask.testing import create_test_backend\n"
    "backend = create_test_backend(port=int(sys.argv[1]))\n"
    "sys.stdin.read()\n"
    "backend.stop()\n"
)


@pytest.fixture(scope="session")
def official_backend_port(peer_py: Path) -> Iterator[int]:
    port = _free_port()
    proc = subprocess.Popen(
        [str(peer_py), "-c", _BACKEND, str(port)],
        stdin=subprocess.PIPE,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=peer_env(),
        cwd="/",
    )
    try:
        _wait_until_listening(port, proc, 30)
        yield port
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_in_peer(peer_py: Path, mode: str, address: str, scenario: str) -> Any:
    """Run one scenario with Microsoft's SDK in a subprocess (``dts`` mode gets a fresh task hub)."""
    taskhub = f"interop{uuid.uuid4().hex[:10]}"
    args = [str(peer_py), str(runners.DRIVER), mode, address, taskhub, "run", scenario]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=PEER_TIMEOUT, env=peer_env(), cwd="/")
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"result"')]
    assert proc.returncode == 0 and lines, f"peer failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1])["result"]


def run_here(official_backend_port: int, scenario: str) -> Any:
    """Run one scenario with our SDK, in this process, against Microsoft's in-memory backend."""
    address = f"localhost:{official_backend_port}"
    with runners.harness("grpc", address, "default", our_env(), str(ROOT)) as harness:
        # A JSON round trip so both directions are compared in the same shapes (lists, not tuples).
        return json.loads(json.dumps(runners.SCENARIOS[scenario](harness)))
