"""LangGraph system harness: real worker processes (worker_app.py) on an emulator, sharing an effect ledger.

``cluster`` runs the emulator as a process of its own on a SQLite file, as the recovery tests do.
``clocked_cluster`` runs it in the test's process on a SQLite file with a manual clock, so a test can let days
pass while a thread waits; the worker processes connect to it over TCP all the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask.extensions.langgraph import DurableGraph
from tests.support.reliability import env
from tests.system.langgraph.graphs import build_all
from tests.system.recovery.conftest import Cluster

WORKER_APP = Path(__file__).with_name("worker_app.py")
CLIENT_APP = Path(__file__).with_name("client_app.py")


class GraphCluster(Cluster):
    """The recovery cluster, with LangGraph worker processes and DurableGraph clients on the same graphs."""

    def start_graph_worker(self, role: str = "all") -> subprocess.Popen[str]:
        return self.start_app(WORKER_APP, self.address, str(self.ledger.path), role, log=self.folder / "workers.log")

    def app(self, graph: str) -> DurableGraph:
        return DurableGraph(self.client, graph, build_all(self.ledger)[graph])

    def client_process(self, graph: str, thread_id: str, resume: Any) -> Any:
        """Resumes ``thread_id`` from a separate client process; returns what its invoke returned (as JSON)."""
        proc = subprocess.run(
            [
                sys.executable,
                str(CLIENT_APP),
                self.address,
                str(self.ledger.path),
                graph,
                thread_id,
                json.dumps(resume),
            ],
            env=env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.splitlines()[-1])


class ClockedCluster(GraphCluster):
    """The emulator in this process, on a SQLite file and a manual clock."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.clock = ManualClock()
        self.server: EmulatorServer | None = None

    def start_emulator(self) -> None:
        self.server = EmulatorServer(port=self.port, db_path=str(self.db), clock=self.clock)
        self.server.start()

    def _stop(self) -> None:
        super()._stop()
        if self.server is not None:
            self.server.stop()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[GraphCluster]:
    c = GraphCluster(tmp_path)
    c.start_emulator()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def clocked_cluster(tmp_path: Path) -> Iterator[ClockedCluster]:
    c = ClockedCluster(tmp_path)
    c.start_emulator()
    try:
        yield c
    finally:
        c.close()
