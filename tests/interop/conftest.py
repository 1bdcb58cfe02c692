"""Interop fixtures: our emulator in-process, Microsoft's in-memory backend in a subprocess, and scenario launchers.

One backend per direction per session; scenarios isolate themselves with unique task hubs and instance IDs.
With ``--backend`` the dts-mode scenarios run against that endpoint instead (``scheduler``, test_external.py).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.external.plugin import taskhubs

from . import harness, runners

ROOT = Path(__file__).resolve().parents[2]
PEER_TIMEOUT = 90
BATCH_TIMEOUT = 110


def peer_env() -> dict[str, str]:
    """The environment for the peer: without PYTHONPATH, so it imports its own ``durabletask`` and never ours."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def our_env() -> dict[str, str]:
    """The environment for worker processes running our SDK."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="session")
def emulator_port() -> Iterator[int]:
    from dtscale_emulator.server import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server.port
    server.stop()


@pytest.fixture
def scheduler(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """Address and task hub for one dts-mode test: our emulator with a new hub, or the external backend's hub."""
    hubs = taskhubs(request.config)
    if hubs is None:
        port = request.getfixturevalue("emulator_port")
        yield f"http://localhost:{port}", f"interop{uuid.uuid4().hex[:10]}"
        return
    name = hubs.open()
    try:
        yield hubs.backend.endpoint, name  # the harness removes what it made from a shared hub
    finally:
        hubs.release(name)


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


@contextmanager
def official_backend(peer_py: Path) -> Iterator[int]:
    """Microsoft's in-memory backend in a subprocess, listening on the port this yields."""
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


@pytest.fixture(scope="session")
def official_backend_port(peer_py: Path) -> Iterator[int]:
    with official_backend(peer_py) as port:
        yield port


def _driver_args(
    python: Path | str, mode: str, address: str, scenarios: list[str], taskhub: str | None = None
) -> list[str]:
    """The driver's command line; each scenario gets a task hub of its own unless ``taskhub`` names one."""
    taskhub = taskhub or f"interop{uuid.uuid4().hex[:10]}{{scenario}}"
    return [str(python), str(harness.DRIVER), mode, address, taskhub, "run", *scenarios]


def _results(stdout: str) -> dict[str, dict[str, Any]]:
    found = [json.loads(line) for line in stdout.splitlines() if line.startswith('{"scenario"')]
    return {line.pop("scenario"): line for line in found}


def _result(outcome: dict[str, Any] | None, stderr: str) -> Any:
    assert outcome is not None, f"the peer gave no result:\n{stderr[-4000:]}"
    assert "error" not in outcome, f"the scenario raised in the peer:\n{outcome['error']}"
    return outcome["result"]


def run_in_peer(peer_py: Path, mode: str, address: str, scenario: str) -> Any:
    """Run one scenario with Microsoft's SDK in a subprocess (``dts`` mode gets a fresh task hub)."""
    args = _driver_args(peer_py, mode, address, [scenario])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=PEER_TIMEOUT, env=peer_env(), cwd="/")
    return _result(_results(proc.stdout).get(scenario), proc.stderr)


class Batch:
    """Results of scenarios run one after another by the driver in one background subprocess."""

    def __init__(self, proc: subprocess.Popen[str], out: IO[str], err: IO[str], timeout: float) -> None:
        self._proc, self._out, self._err = proc, out, err
        self._timeout = timeout
        self._outcomes: dict[str, dict[str, Any]] | None = None

    def finish(self) -> None:
        """Wait until every scenario of the batch has run."""
        if self._outcomes is None:
            self._proc.wait(timeout=self._timeout)
            self._out.seek(0)
            self._outcomes = _results(self._out.read())

    def result(self, scenario: str) -> Any:
        self.finish()
        assert self._outcomes is not None
        self._err.seek(0)
        return _result(self._outcomes.get(scenario), self._err.read())


@contextmanager
def background_batch(
    python: Path | str,
    env: dict[str, str],
    cwd: str,
    mode: str,
    address: str,
    scenarios: list[str],
    taskhub: str | None = None,
    timeout: float = BATCH_TIMEOUT,
) -> Iterator[Batch]:
    """Start the batch now and let other tests run meanwhile; results are collected when first asked for."""
    # Files, not pipes: nobody reads until the first result is wanted, and a full pipe would stall the driver.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        args = _driver_args(python, mode, address, scenarios, taskhub)
        proc = subprocess.Popen(args, stdout=out, stderr=err, text=True, env=env, cwd=cwd)
        try:
            yield Batch(proc, out, err, timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def run_here(official_backend_port: int, scenario: str) -> Any:
    """Run one scenario with our SDK, in this process, against Microsoft's in-memory backend."""
    address = f"localhost:{official_backend_port}"
    with harness.open_harness("grpc", address, "default", our_env(), str(ROOT)) as h:
        # A JSON round trip so both directions are compared in the same shapes (lists, not tuples).
        return json.loads(json.dumps(runners.SCENARIOS[scenario](h)))
