"""Group commit under concurrent load: every acknowledged write survives a SIGKILL of the emulator, and a simulated
power loss at a random point (the write-ahead log cut back to what its last completed sync covered)."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from tests.support.reliability import ROOT, env, free_port, kill, start_emulator, wait_until

from .sync_recording_emulator import frames_in_log

RECORDING = Path(__file__).with_name("sync_recording_emulator.py")
META = [("taskhub", "default")]
CLIENTS = 6
#: SQLite's checkpoint (at 4,000 frames) syncs the log itself; the loads here stay far below it, so every sync of
#: the log is one the recording sees, and the log is never written over from its start.
CHECKPOINT_FRAMES = 4000


class Load:
    """Client threads, each on its own channel, starting instances and raising an event to each one started."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.started: list[str] = []
        self.raised: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, args=(n,)) for n in range(CLIENTS)]

    def acknowledged(self) -> int:
        with self._lock:
            return len(self.started) + len(self.raised)

    def _client(self, n: int) -> None:
        with grpc.insecure_channel(self.address) as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            for i in range(100_000):
                if self._stop.is_set():
                    return
                iid = f"c{n}-{i}"
                try:
                    stub.StartInstance(pb.CreateInstanceRequest(instanceId=iid, name="Orch"), metadata=META, timeout=10)
                    with self._lock:
                        self.started.append(iid)
                    stub.RaiseEvent(pb.RaiseEventRequest(instanceId=iid, name="go"), metadata=META, timeout=10)
                    with self._lock:
                        self.raised.append(iid)
                except grpc.RpcError:
                    return  # the emulator is gone: what was not acknowledged may be lost

    @contextlib.contextmanager
    def running(self) -> Iterator[Load]:
        for t in self._threads:
            t.start()
        try:
            yield self
        finally:
            self._stop.set()
            for t in self._threads:
                t.join(30)


def _recording_emulator(db: Path, port: int, record: Path, durability: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(RECORDING), "--db", str(db), "--port", str(port), "--log-level", "WARNING",
         "--no-dashboard", "--durability", durability],
        cwd=ROOT, env={**env(), "DTS_TEST_SYNC_RECORD": str(record)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on" in line, f"the emulator did not start: {line!r}"
    return proc


def _power_loss(db: Path, record: Path) -> int:
    """Leaves the log as a power loss right now would: the frames the last completed sync covered, zeros after."""
    wal = Path(f"{db}-wal")
    lines = record.read_text().split() if record.exists() else []
    synced = int(lines[-1]) if lines else 0
    assert frames_in_log(f"{db}-shm") < CHECKPOINT_FRAMES  # no checkpoint ran: the recording saw every sync
    data = wal.read_bytes()
    page = int.from_bytes(data[8:12], "big") if synced else 0
    keep = 32 + synced * (page + 24) if synced else 0
    wal.write_bytes(data[:keep] + bytes(len(data) - keep))
    Path(f"{db}-shm").unlink()
    return synced


def _found(db: Path, port: int, load: Load) -> tuple[list[str], list[str]]:
    """Restarts the emulator on the store; returns the acknowledged starts and events it does not have."""
    proc = start_emulator(db, port, "--no-dashboard")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            missing = [
                iid
                for iid in load.started
                if not stub.GetInstance(pb.GetInstanceRequest(instanceId=iid), metadata=META, timeout=30).exists
            ]
    finally:
        kill(proc, 15)  # a graceful stop, so the file is read whole below
    with contextlib.closing(sqlite3.connect(db)) as conn:
        raised = set()
        for iid, event in conn.execute("SELECT instance_id, event FROM messages"):
            if pb.HistoryEvent.FromString(event).HasField("eventRaised"):
                raised.add(iid)
    return missing, [iid for iid in load.raised if iid not in raised]


def _crash_under_load(tmp_path: Path, crash: str, durability: str, seed: int) -> tuple[list[str], list[str], Load]:
    rng = random.Random(seed)
    db, port, record = tmp_path / "emu.db", free_port(), tmp_path / "syncs.txt"
    emulator = _recording_emulator(db, port, record, durability)
    load = Load(f"127.0.0.1:{port}")
    try:
        with load.running():
            target = rng.randint(20, 150)  # the point of the crash: after this many acknowledgements
            wait_until(lambda: load.acknowledged() >= target, 60, f"{target} acknowledged writes")
            kill(emulator)
    finally:
        kill(emulator)
    if crash == "power loss":
        _power_loss(db, record)
    missing_starts, missing_events = _found(db, port, load)
    return missing_starts, missing_events, load


@pytest.mark.parametrize("crash", ["SIGKILL", "power loss"])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_acknowledged_write_survives_a_crash_at_a_random_point_under_load(
    tmp_path: Path, crash: str, seed: int
) -> None:
    missing_starts, missing_events, load = _crash_under_load(tmp_path, crash, "full", seed)
    assert load.started and load.raised
    assert missing_starts == [] and missing_events == []


def test_the_power_loss_simulation_finds_what_normal_durability_loses(tmp_path: Path) -> None:
    """The same crash with ``--durability normal`` (no sync before the answer) loses acknowledged writes: the
    simulation can tell a store that answers before its data is on disk."""
    missing_starts, _, load = _crash_under_load(tmp_path, "power loss", "normal", 3)
    assert load.started and missing_starts
