"""Recovery harness: a real emulator process on a SQLite file, real worker processes, and an effect ledger."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from durabletask import client
from tests.recovery.support import Ledger, fetch_history, free_port, kill, kinds, start_emulator, start_script

WORKER_APP = Path(__file__).with_name("worker_app.py")


class Cluster:
    """One emulator process and any number of worker processes, all sharing one ledger."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db = folder / "emulator.db"
        self.ledger = Ledger(folder / "ledger.db")
        self.port = free_port()
        self.emulator: subprocess.Popen[str] | None = None
        self.workers: list[subprocess.Popen[str]] = []
        self._client: client.TaskHubGrpcClient | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start_emulator(self) -> None:
        self.emulator = start_emulator(self.db, self.port, "--health-ping-interval", "1")

    def kill_emulator(self) -> None:
        assert self.emulator is not None
        kill(self.emulator)
        self.emulator = None

    def start_worker(self, version: str | None = None) -> subprocess.Popen[str]:
        args = [self.address, str(self.ledger.path), *([version] if version else [])]
        proc = start_script(WORKER_APP, *args, log=self.folder / "workers.log")
        self.workers.append(proc)
        return proc

    def kill_worker(self, proc: subprocess.Popen[str]) -> None:
        kill(proc)
        self.workers.remove(proc)

    @property
    def client(self) -> client.TaskHubGrpcClient:
        if self._client is None:
            self._client = client.TaskHubGrpcClient(host_address=self.address)
        return self._client

    def history_kinds(self, instance_id: str) -> list[str]:
        return kinds(fetch_history(self.address, instance_id))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        for proc in list(self.workers):
            self.kill_worker(proc)
        if self.emulator is not None:
            kill(self.emulator, 15)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    c.start_emulator()
    try:
        yield c
    finally:
        c.close()
