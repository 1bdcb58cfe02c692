"""Group commit under concurrent load: every acknowledged write survives a SIGKILL of the emulator, and a simulated
power loss at a random point (the write-ahead log cut back to what its last completed sync covered).

The load covers each kind of write a caller is answered for: starts, raised events and entity signals from six
clients, and, through a worker of the test's own (raw gRPC) and a purging client, orchestration completions and
purges."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from dtscale_emulator.storage.kernel_sync import open_kernel_sync
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
    """Client threads, each on its own channel: starting instances, raising an event to each one and signalling an
    entity; beside them, a worker completing the instances of another orchestration, and a client purging those
    whose completion was acknowledged. Each list holds only what was acknowledged."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.started: list[str] = []
        self.raised: list[str] = []
        self.signalled: list[str] = []
        self.completed: list[str] = []
        self.purge_sent: set[str] = set()
        self.purged: list[str] = []
        self.refusals: list[tuple[grpc.StatusCode, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, args=(n,)) for n in range(CLIENTS)]
        self._threads += [threading.Thread(target=self._starter), threading.Thread(target=self._worker)]
        self._threads.append(threading.Thread(target=self._purger))

    def clients_done(self) -> bool:
        """Every client and the starter have stopped (each stops at its first failed call)."""
        return not any(t.is_alive() for t in self._threads[: CLIENTS + 1])

    def acknowledged(self) -> int:
        with self._lock:
            return len(self.started) + len(self.raised) + len(self.signalled) + len(self.completed) + len(self.purged)

    def _ack(self, into: list[str], iid: str) -> None:
        with self._lock:
            into.append(iid)

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
                    entity = f"@counter@{iid}"
                    stub.SignalEntity(pb.SignalEntityRequest(instanceId=entity, name="add"), metadata=META, timeout=10)
                    self._ack(self.signalled, entity)
                except grpc.RpcError as error:
                    with self._lock:
                        self.refusals.append((error.code(), error.details() or ""))  # type: ignore[attr-defined]
                    return  # the emulator is gone or failing: what was not acknowledged may be lost

    def _starter(self) -> None:
        """Starts instances of ``Done``, the orchestration the worker completes."""
        with grpc.insecure_channel(self.address) as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            for i in range(100_000):
                if self._stop.is_set():
                    return
                try:
                    stub.StartInstance(pb.CreateInstanceRequest(instanceId=f"d-{i}", name="Done"), metadata=META)
                except grpc.RpcError:
                    return

    def _worker(self) -> None:
        """Completes each ``Done`` instance it is given, in its first turn."""
        only_done = pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Done")])
        with grpc.insecure_channel(self.address) as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            items = stub.GetWorkItems(pb.GetWorkItemsRequest(workItemFilters=only_done), metadata=META)
            try:
                for item in items:
                    if self._stop.is_set():
                        return
                    if not item.HasField("orchestratorRequest"):
                        continue
                    iid = item.orchestratorRequest.instanceId
                    done = pb.CompleteOrchestrationAction(orchestrationStatus=pb.ORCHESTRATION_STATUS_COMPLETED)
                    response = pb.OrchestratorResponse(
                        instanceId=iid,
                        completionToken=item.completionToken,
                        actions=[pb.OrchestratorAction(id=0, completeOrchestration=done)],
                    )
                    stub.CompleteOrchestratorTask(response, metadata=META, timeout=10)
                    self._ack(self.completed, iid)
            except grpc.RpcError:
                return
            finally:
                items.cancel()

    def _purger(self) -> None:
        """Purges the instances whose completion was acknowledged, one call each."""
        with grpc.insecure_channel(self.address) as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            while not self._stop.wait(0.005):
                with self._lock:
                    todo = [iid for iid in self.completed if iid not in self.purge_sent][:5]
                    self.purge_sent.update(todo)
                for iid in todo:
                    try:
                        purged = stub.PurgeInstances(
                            pb.PurgeInstancesRequest(instanceId=iid), metadata=META, timeout=10
                        )
                    except grpc.RpcError:
                        return
                    assert purged.deletedInstanceCount == 1, iid
                    self._ack(self.purged, iid)

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


def _kernel_syncs_work() -> bool:
    with tempfile.TemporaryFile() as f:
        found = open_kernel_sync(f.fileno())
        if found is None:
            return False
        found.close()
        return True


#: Where the log's syncs run: on the group commit's thread, or in the kernel for the event loop (Linux's AIO).
PATHS = ["thread", "kernel"] if _kernel_syncs_work() else ["thread"]


def _recording_emulator(
    db: Path, port: int, record: Path, durability: str, fail_sync: int = 0, path: str = "thread"
) -> subprocess.Popen[str]:
    environ = {**env(), "DTS_TEST_SYNC_RECORD": str(record), "DTS_TEST_FAIL_SYNC": str(fail_sync)}
    if path == "kernel":
        environ["DTS_TEST_SYNC_PATH"] = "kernel"  # else the recording's own sync leaves the syncs to the thread
    proc = subprocess.Popen(
        [sys.executable, str(RECORDING), "--db", str(db), "--port", str(port), "--log-level", "CRITICAL",
         "--no-dashboard", "--durability", durability],
        cwd=ROOT, env=environ, stdout=subprocess.PIPE, text=True,
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


def _instances(port: int, ids: list[str]) -> dict[str, pb.GetInstanceResponse]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        return {iid: stub.GetInstance(pb.GetInstanceRequest(instanceId=iid), metadata=META, timeout=30) for iid in ids}


def _found(db: Path, port: int, load: Load) -> dict[str, list[str]]:
    """Restarts the emulator on the store; returns, by kind, the acknowledged writes it does not have."""
    proc = start_emulator(db, port, "--no-dashboard")
    try:
        got = _instances(port, [*load.started, *load.completed])
    finally:
        kill(proc, 15)  # a graceful stop, so the file is read whole below
    with contextlib.closing(sqlite3.connect(db)) as conn:
        queued: dict[str, set[str]] = {"eventRaised": set(), "entityOperationSignaled": set()}
        for iid, event in conn.execute("SELECT instance_id, event FROM messages"):
            kind = pb.HistoryEvent.FromString(event).WhichOneof("eventType")
            if kind in queued:
                queued[kind].add(iid)
    completed = pb.ORCHESTRATION_STATUS_COMPLETED
    return {
        "starts": [iid for iid in load.started if not got[iid].exists],
        "events": [iid for iid in load.raised if iid not in queued["eventRaised"]],
        "signals": [e for e in load.signalled if e not in queued["entityOperationSignaled"]],
        # A completion is kept unless a purge of the instance was sent (answered or not: it may have committed).
        "completions": [
            iid
            for iid in load.completed
            if not (got[iid].exists and got[iid].orchestrationState.orchestrationStatus == completed)
            and iid not in load.purge_sent
        ],
        "purges": [iid for iid in load.purged if got[iid].exists],
    }


def _crash_under_load(
    tmp_path: Path, crash: str, durability: str, seed: int, path: str = "thread"
) -> tuple[dict[str, list[str]], Load]:
    rng = random.Random(seed)
    db, port, record = tmp_path / "emu.db", free_port(), tmp_path / "syncs.txt"
    emulator = _recording_emulator(db, port, record, durability, path=path)
    load = Load(f"127.0.0.1:{port}")
    try:
        with load.running():
            target = rng.randint(40, 300)  # the point of the crash: after this many acknowledgements (one a purge)
            wait_until(lambda: load.acknowledged() >= target and bool(load.purged), 60, f"{target} acknowledged writes")
            kill(emulator)
    finally:
        kill(emulator)
    if crash == "power loss":
        _power_loss(db, record)
    return _found(db, port, load), load


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("crash", ["SIGKILL", "power loss"])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_acknowledged_write_survives_a_crash_at_a_random_point_under_load(
    tmp_path: Path, crash: str, seed: int, path: str
) -> None:
    missing, load = _crash_under_load(tmp_path, crash, "full", seed, path)
    assert load.started and load.raised and load.signalled and load.completed and load.purged
    assert missing == {"starts": [], "events": [], "signals": [], "completions": [], "purges": []}


def test_the_power_loss_simulation_finds_what_normal_durability_loses(tmp_path: Path) -> None:
    """The same crash with ``--durability normal`` (no sync before the answer) loses acknowledged writes: the
    simulation can tell a store that answers before its data is on disk."""
    missing, load = _crash_under_load(tmp_path, "power loss", "normal", 3)
    assert load.started and missing["starts"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("seed", [5, 6])
def test_after_a_sync_fails_under_load_nothing_more_is_acknowledged_and_a_power_loss_keeps_all_that_was(
    tmp_path: Path, seed: int, path: str
) -> None:
    """A sync fails at a random point under the same load: every client is refused from then on (with the batch's
    error or the one that asks for a restart, under one error ID), and a power loss right after, cutting the log
    back to the last sync that succeeded, loses nothing that any client was told was done."""
    rng = random.Random(seed)
    db, port, record = tmp_path / "emu.db", free_port(), tmp_path / "syncs.txt"
    emulator = _recording_emulator(db, port, record, "full", fail_sync=rng.randint(15, 60), path=path)
    load = Load(f"127.0.0.1:{port}")
    try:
        with load.running():
            wait_until(load.clients_done, 60, "every client refused")
            kill(emulator)
    finally:
        kill(emulator)
    _power_loss(db, record)
    missing = _found(db, port, load)
    assert load.started
    assert missing == {"starts": [], "events": [], "signals": [], "completions": [], "purges": []}
    assert len(load.refusals) == CLIENTS
    assert all(code == grpc.StatusCode.UNAVAILABLE for code, _ in load.refusals)
    ids = {details.split("(error ")[1][:12] for _, details in load.refusals}
    assert len(ids) == 1, load.refusals  # one failed sync, one error ID for every caller it concerned
