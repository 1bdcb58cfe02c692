"""Recovery harness: a real emulator process on a SQLite file, real worker processes, and an effect ledger.

With ``--backend`` the cluster uses that endpoint instead of starting an emulator (tests that crash the
emulator are marked ``emulator_internals``): worker processes run the DurableTaskScheduler worker against a
task hub of the test's own or the shared one, instance IDs get a unique prefix, and what the test made is removed.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from durabletask import client
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.support.endpoint import Made
from tests.support.external.backend import TASKHUB_ENV, Backend, TaskHubs
from tests.support.reliability import (
    Ledger,
    env,
    fetch_history,
    free_port,
    kill,
    kinds,
    start_emulator,
    start_script,
)

WORKER_APP = Path(__file__).with_name("worker_app.py")


class Cluster:
    """One emulator process (or an external backend) and any number of worker processes, sharing one ledger."""

    def __init__(self, folder: Path, hubs: TaskHubs | None = None) -> None:
        self.folder = folder
        self.db = folder / "emulator.db"
        self.ledger = Ledger(folder / "ledger.db")
        self.port = free_port()
        self.emulator: subprocess.Popen[str] | None = None
        self.workers: list[subprocess.Popen[str]] = []
        self._client: client.TaskHubGrpcClient | None = None
        self.hubs = hubs
        self.backend: Backend | None = hubs.backend if hubs is not None else None
        self.taskhub = hubs.open() if hubs is not None else "default"
        # Unique IDs where others may share the task hub; the plain names on an emulator of the test's own.
        self.prefix = f"{uuid.uuid4().hex[:8]}-" if hubs is not None else ""
        self.made = Made() if hubs is not None else None

    def id(self, name: str) -> str:
        return f"{self.prefix}{name}"

    @property
    def address(self) -> str:
        return self.backend.endpoint if self.backend is not None else f"127.0.0.1:{self.port}"

    def start_emulator(self, *extra: str) -> None:
        if self.backend is None:
            self.emulator = start_emulator(self.db, self.port, "--health-ping-interval", "1", *extra)

    def kill_emulator(self) -> None:
        assert self.emulator is not None
        kill(self.emulator)
        self.emulator = None

    def start_worker(self, version: str | None = None) -> subprocess.Popen[str]:
        args = [self.address, str(self.ledger.path), *([version] if version else [])]
        return self.start_app(WORKER_APP, *args, log=self.folder / "workers.log")

    def start_app(self, script: Path, *args: str, log: Path) -> subprocess.Popen[str]:
        """A worker process running ``script``; told the task hub when the tests target an external backend."""
        if self.backend is None:
            proc = start_script(script, *args, log=log)
        else:
            with open(log, "a") as err:
                proc = subprocess.Popen([sys.executable, str(script), *args], cwd=script.parent,
                                        env={**env(), TASKHUB_ENV: self.taskhub}, stdout=subprocess.DEVNULL,
                                        stderr=err, text=True)
        self.workers.append(proc)
        return proc

    def kill_worker(self, proc: subprocess.Popen[str]) -> None:
        kill(proc)
        self.workers.remove(proc)

    @property
    def client(self) -> client.TaskHubGrpcClient:
        if self._client is None:
            if self.backend is not None and self.made is not None:
                self._client = self.backend.client(self.taskhub, [self.made.interceptor()])
            else:
                self._client = client.TaskHubGrpcClient(host_address=self.address)
        return self._client

    def history(self, instance_id: str) -> list[pb.HistoryEvent]:
        if self.backend is not None:
            return self.backend.history(self.taskhub, instance_id)
        return fetch_history(self.address, instance_id)

    def history_kinds(self, instance_id: str) -> list[str]:
        return kinds(self.history(instance_id))

    def close(self) -> None:
        if self.hubs is not None and self.made is not None:
            try:
                self.hubs.clean(self.taskhub, self.made)  # while the workers still run
            finally:
                self._stop()
                self.hubs.release(self.taskhub)
            return
        self._stop()

    def _stop(self) -> None:
        if self._client is not None:
            self._client.close()
        for proc in list(self.workers):
            self.kill_worker(proc)
        if self.emulator is not None:
            kill(self.emulator, 15)


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    from tests.support.external.plugin import taskhubs

    c = Cluster(tmp_path, taskhubs(request.config))
    c.start_emulator()
    try:
        yield c
    finally:
        c.close()
