"""Shared reliability helpers: an effect ledger in SQLite, history fetching and checks, artifacts, processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import grpc
from google.protobuf import json_format

from durabletask import client
from durabletask._errors import DurableTaskError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
FINAL = (
    client.OrchestrationStatus.COMPLETED,
    client.OrchestrationStatus.FAILED,
    client.OrchestrationStatus.TERMINATED,
)


class Ledger:
    """External side effects keyed by a stable effect key, shared by every process through one SQLite file.

    ``apply`` is what an idempotent activity does: it records the attempt and applies the effect only
    if its key is new, so a retried or redelivered activity never applies an effect twice.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connect() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, value TEXT, at REAL)")
            conn.execute("CREATE TABLE IF NOT EXISTS attempts (key TEXT, pid INTEGER, at REAL)")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            yield conn
        finally:
            conn.close()

    def apply(self, key: str, value: str = "") -> bool:
        """Records an attempt; applies the effect unless its key is already there. True if applied now."""
        with self._connect() as conn:
            conn.execute("INSERT INTO attempts VALUES (?, ?, ?)", (key, os.getpid(), time.time()))
            cur = conn.execute("INSERT OR IGNORE INTO effects VALUES (?, ?, ?)", (key, value, time.time()))
            return cur.rowcount == 1

    def has(self, key: str) -> bool:
        with self._connect() as conn:
            return conn.execute("SELECT 1 FROM effects WHERE key = ?", (key,)).fetchone() is not None

    def effects(self) -> dict[str, str]:
        with self._connect() as conn:
            return dict(conn.execute("SELECT key, value FROM effects").fetchall())

    def attempts(self) -> Counter[str]:
        with self._connect() as conn:
            return Counter(key for (key,) in conn.execute("SELECT key FROM attempts"))


def fetch_history(
    address: str, instance_id: str, hub: str = "default", *, extra: Sequence[tuple[str, str]] = ()
) -> list[pb.HistoryEvent]:
    """The instance's full event history read over gRPC."""
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        chunks = stub.StreamInstanceHistory(
            pb.StreamInstanceHistoryRequest(instanceId=instance_id), metadata=[("taskhub", hub), *extra], timeout=30
        )
        return [event for chunk in chunks for event in chunk.events]


def kinds(events: Sequence[pb.HistoryEvent]) -> list[str]:
    return [str(e.WhichOneof("eventType")) for e in events]


def save_history(name: str, events: Sequence[pb.HistoryEvent]) -> Path:
    """Writes the history as readable JSON under ``artifacts/`` and returns the file."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.json"
    rows = [json_format.MessageToDict(e, preserving_proto_field_name=True) for e in events]
    path.write_text(json.dumps(rows, indent=2))
    return path


def assert_exactly_once(events: Sequence[pb.HistoryEvent]) -> None:
    """Every scheduled task has exactly one outcome and the run ended once: nothing applied twice."""
    scheduled = [e.eventId for e in events if e.HasField("taskScheduled")]
    outcomes = [
        e.taskCompleted.taskScheduledId if e.HasField("taskCompleted") else e.taskFailed.taskScheduledId
        for e in events
        if e.HasField("taskCompleted") or e.HasField("taskFailed")
    ]
    assert len(set(scheduled)) == len(scheduled), f"a task was scheduled twice: {scheduled}"
    assert sorted(outcomes) == sorted(scheduled), f"scheduled {scheduled}, outcomes {outcomes}"
    assert kinds(events).count("executionCompleted") == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def start_emulator(db: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    """``python -m emulator`` on ``db`` and ``port``; returns once it is listening."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--db", str(db), "--port", str(port), "--log-level", "WARNING",
         *extra],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on" in line, f"the emulator did not start: {line!r}"
    return proc


def start_script(script: Path, *args: str, log: Path | None = None) -> subprocess.Popen[str]:
    """A Python helper process (a worker) with the repository on its path; stderr goes to ``log``."""
    with open(log or os.devnull, "a") as err:
        return subprocess.Popen(
            [sys.executable, str(script), *args], cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=err, text=True
        )


def wait_done(c: client.TaskHubGrpcClient, ids: Sequence[str], timeout: float) -> dict[str, client.OrchestrationState]:
    """Waits for every instance to reach a final state, riding out calls that fail while a server restarts."""
    deadline = time.monotonic() + timeout
    done: dict[str, client.OrchestrationState] = {}
    for iid in ids:
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{len(ids) - len(done)} instances did not finish, e.g. {iid}"
            try:
                state = c.wait_for_orchestration_completion(iid, timeout=min(remaining, 10))
            except (grpc.RpcError, DurableTaskError, TimeoutError):
                time.sleep(0.05)  # the server is restarting; try again shortly
                continue
            if state is not None and state.runtime_status in FINAL:
                done[iid] = state
                break
    return done


def kill(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    """Sends ``sig`` (SIGKILL by default: a crash) and reaps the process."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()  # a process that ignores a graceful stop must not outlive the test
        proc.wait(5)
        raise AssertionError(f"process {proc.pid} did not exit within 15 s of signal {sig}") from None
    if proc.stdout is not None:
        proc.stdout.close()


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Bounded polling for state another process writes (files, databases), where no notification exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
