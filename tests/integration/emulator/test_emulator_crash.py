"""Crash safety: kill -9 the emulator mid-workload, restart it on the same database, and everything finishes."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import peer_env

pytestmark = pytest.mark.interop
ROOT = Path(__file__).resolve().parents[3]
WORKLOAD = Path(__file__).parent / "peer" / "crash_workload.py"
COUNT, WIDTH = 12, 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _emulator(db: Path, port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dtscale_emulator",
            "--db",
            str(db),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "WARNING",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert "listening on" in proc.stdout.readline()
    return proc


def _reap(proc: subprocess.Popen[str]) -> None:
    proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


def _wait_for_lines(log: Path, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= count:
            return
        time.sleep(0.02)  # bounded polling of a file another process writes
    raise AssertionError(f"the workload did not reach {count} activity runs")


def test_kill_9_and_restart_loses_nothing(tmp_path: Path, peer_py: Path) -> None:
    db, log, port = tmp_path / "emu.db", tmp_path / "runs.log", _free_port()
    emulator = _emulator(db, port)
    workload = subprocess.Popen(
        [str(peer_py), str(WORKLOAD), f"127.0.0.1:{port}", str(log), str(COUNT), str(WIDTH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=peer_env(),
        cwd=WORKLOAD.parent,
    )
    try:
        _wait_for_lines(log, COUNT * WIDTH // 3, timeout=60)
        emulator.send_signal(signal.SIGKILL)
        _reap(emulator)
        emulator = _emulator(db, port)
        out, _ = workload.communicate(timeout=100)
    finally:
        workload.kill()
        workload.communicate()
        emulator.terminate()
        _reap(emulator)

    results = json.loads(out.strip().splitlines()[-1])["results"]
    expected = sum(i * i for i in range(WIDTH)) + 100 * 100
    assert results == {f"crash-{i}": ["COMPLETED", expected] for i in range(COUNT)}

    runs = collections.Counter(log.read_text().splitlines())
    assert len(runs) == COUNT * (WIDTH + 1)
    # Only activities in flight at the moment of the kill (at most the worker's concurrency) may run twice.
    assert sum(n - 1 for n in runs.values()) <= 4

    with contextlib.closing(sqlite3.connect(db)) as conn:
        for instance in results:
            rows = conn.execute(
                "SELECT h.event FROM history h JOIN instances i USING (ikey) WHERE i.instance_id = ? ORDER BY seq",
                (instance,),
            )
            events = [pb.HistoryEvent.FromString(r[0]) for r in rows]
            completed = [e.taskCompleted.taskScheduledId for e in events if e.HasField("taskCompleted")]
            scheduled = [e.eventId for e in events if e.HasField("taskScheduled")]
            assert sorted(completed) == sorted(scheduled) and len(set(completed)) == len(completed)
