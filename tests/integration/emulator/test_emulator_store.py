"""One store, one server: the database lock, failed COMMITs and ROLLBACKs, the durability setting."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2

from dtscale_emulator.__main__ import build_parser
from dtscale_emulator.errors import DatabaseInUseError, StorageError
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import SqliteBackend
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.support.reliability import env, free_port, kill, start_emulator, wait_until

from .conftest import HubStub, WorkStream, complete, schedule, start, uid


def test_a_second_server_on_the_same_database_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "emu.db")
    with (
        EmulatorServer(port=0, db_path=db),
        pytest.raises(DatabaseInUseError, match="already served by another emulator"),
    ):
        EmulatorServer(port=0, db_path=db)
    with EmulatorServer(port=0, db_path=db):  # the lock goes with the first server
        pass


def test_a_second_emulator_process_exits_with_a_clear_message(tmp_path: Path) -> None:
    db = tmp_path / "emu.db"
    first = start_emulator(db, free_port())
    try:
        second = subprocess.run(
            [sys.executable, "-m", "dtscale_emulator", "--db", str(db), "--port", str(free_port())],
            env=env(),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1
        assert f"the database {db} is already served by another emulator (process {first.pid}" in second.stderr
    finally:
        kill(first)
    restarted = start_emulator(db, free_port())  # a killed holder leaves no lock behind
    kill(restarted, 15)


class _FailingConnection:
    """A connection whose COMMIT (and optionally ROLLBACK) fails the way a full disk makes it fail."""

    def __init__(self, real: sqlite3.Connection, fail: set[str]) -> None:
        self._real = real
        self.fail = fail

    def execute(self, sql: str, *args: Any) -> Any:
        if sql in self.fail:
            self.fail.discard(sql)
            raise sqlite3.OperationalError(f"database or disk is full (while running {sql} on /secret/emu.db)")
        return self._real.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _records(backend: SqliteBackend) -> list[str]:
    with backend.transaction() as tx:
        return sorted(tx.child_ids("h", "parent"))


def _put(backend: SqliteBackend, iid: str) -> None:
    from dtscale_emulator.storage import InstanceRecord

    with backend.transaction() as tx:
        tx.put_instance(InstanceRecord("h", iid, "e", "n", 0, 1, 1, parent_instance_id="parent"))


def test_a_failed_commit_is_reported_rolled_back_and_the_store_stays_usable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    backend = SqliteBackend(str(tmp_path / "emu.db"))
    real = backend._conn
    backend._conn = _FailingConnection(real, {"COMMIT"})  # type: ignore[assignment]
    with pytest.raises(StorageError) as err, caplog.at_level(logging.ERROR, "dtscale_emulator"):
        _put(backend, "lost")
    assert "disk" not in str(err.value) and "/secret" not in str(err.value)
    error_id = str(err.value).split("error ")[1].split(";")[0]
    assert any(error_id in r.getMessage() and "disk is full" in r.getMessage() for r in caplog.records)
    assert not real.in_transaction
    _put(backend, "kept")
    assert _records(backend) == ["kept"]
    backend.close()


def test_a_failing_rollback_does_not_hide_the_original_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    backend = SqliteBackend(str(tmp_path / "emu.db"))
    real = backend._conn
    backend._conn = _FailingConnection(real, {"ROLLBACK"})  # type: ignore[assignment]
    with (
        pytest.raises(ValueError, match="the original problem"),
        caplog.at_level(logging.ERROR, "dtscale_emulator"),
        backend.transaction(),
    ):
        raise ValueError("the original problem")
    assert any("rollback failed" in r.getMessage() for r in caplog.records)
    real.execute("ROLLBACK")  # what the failed rollback left open
    _put(backend, "after")
    assert _records(backend) == ["after"]
    backend.close()


def test_a_failed_commit_answers_the_call_and_the_server_keeps_serving(tmp_path: Path) -> None:
    with (
        EmulatorServer(port=0, db_path=str(tmp_path / "emu.db")) as server,
        grpc.insecure_channel(server.address) as ch,
    ):
        stub = HubStub(ch, "default")
        server.backend._conn = _FailingConnection(server.backend._conn, {"COMMIT"})  # type: ignore[assignment]
        lost = uid()
        with pytest.raises(grpc.RpcError) as err:
            start(stub, instance_id=lost)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "error " in (err.value.details() or "") and "disk" not in (err.value.details() or "")
        assert not stub.GetInstance(pb.GetInstanceRequest(instanceId=lost)).exists
        kept = start(stub)
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId=kept)).exists


@pytest.mark.parametrize(("durability", "group_commit"), [("normal", False), ("full", True)])
def test_durability_sets_how_commits_reach_the_disk(tmp_path: Path, durability: str, group_commit: bool) -> None:
    # Both commit without a sync inside COMMIT (NORMAL); ``full`` syncs the log after the commits, in groups.
    backend = SqliteBackend(str(tmp_path / "emu.db"), durability)
    assert backend._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    assert (backend.group_commit is not None) is group_commit
    backend.close()


def test_durability_option() -> None:
    assert build_parser().parse_args([]).durability == "full"
    assert build_parser().parse_args(["--durability", "normal"]).durability == "normal"
    with pytest.raises(ValueError, match="durability must be one of"):
        SqliteBackend(None, "paranoid")
    with EmulatorServer(port=0, in_memory=True, durability="full"):
        pass


def test_a_stalled_disk_holds_the_answers_that_wait_for_it_and_not_a_health_ping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dtscale_emulator.storage import group_commit

    disk = threading.Event()
    disk.set()
    monkeypatch.setattr(group_commit, "sync_file", lambda fd: disk.wait(60) or None)
    with (
        EmulatorServer(port=0, db_path=str(tmp_path / "emu.db")) as server,
        grpc.insecure_channel(server.address) as ch,
    ):
        stub = HubStub(ch, "default")
        kept = start(stub)
        group = server.backend.group_commit
        assert group is not None
        disk.clear()  # the disk stalls
        committed = group.committed
        iid = uid()
        pending = stub._stub.StartInstance.future(
            pb.CreateInstanceRequest(instanceId=iid, name="Orch"), metadata=[("taskhub", "default")]
        )
        wait_until(lambda: group.committed > committed, 30, "the start's commit")
        stub.Hello(empty_pb2.Empty(), timeout=30)  # the loop is free: a health ping is answered
        # Reads of rows with no change waiting for the disk are answered; a read of the new row waits with it.
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId="never-started"), timeout=30).exists is False
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId=kept), timeout=30).exists
        read = stub._stub.GetInstance.future(pb.GetInstanceRequest(instanceId=iid), metadata=[("taskhub", "default")])
        stub.Hello(empty_pb2.Empty(), timeout=30)
        assert not pending.done() and not read.done()  # committed, not yet on disk: not answered, not shown
        disk.set()
        assert pending.result(timeout=30).instanceId == iid
        assert read.result(timeout=30).exists
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId=kept)).exists


def test_an_activitys_work_item_waits_for_its_lease_on_disk_an_orchestrations_only_for_what_it_carries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart keeps an activity's lease (its worker's result still lands), so the item goes out only once that
    lease is synced; it ends every orchestration lease, so an orchestration's item waits only for its events."""
    from dtscale_emulator.storage import group_commit

    disk = threading.Event()
    disk.set()
    monkeypatch.setattr(group_commit, "sync_file", lambda fd: disk.wait(60) or None)
    clock = ManualClock()
    with (
        EmulatorServer(port=0, db_path=str(tmp_path / "emu.db"), clock=clock, lease_timeout=30) as server,
        grpc.insecure_channel(server.address) as ch,
    ):
        stub = HubStub(ch, "default")
        iid = start(stub)  # answered: its events are on disk
        disk.clear()  # the disk stalls
        stream = WorkStream(stub)
        try:
            turn = stream.next(timeout=30)  # its lease is not on disk, but nothing it carries is missing there
            assert turn.orchestratorRequest.instanceId == iid
            disk.set()
            complete(stub, turn, schedule(1, "Act"))
            assert stream.next(timeout=30).activityRequest.name == "Act"
            group = server.backend.group_commit
            assert group is not None
            disk.clear()
            committed = group.committed
            clock.advance(31)  # the lease expires and the activity is leased again: the one commit not on disk
            wait_until(lambda: group.committed > committed, 30, "the activity's new lease")
            assert stream.nothing_for(0.5)
            disk.set()
            assert stream.next(timeout=30).activityRequest.name == "Act"
        finally:
            disk.set()
            stream.cancel()


def test_a_failed_sync_answers_unavailable_and_then_refuses_to_acknowledge_writes_until_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dtscale_emulator.storage import group_commit

    failing = threading.Event()

    def sync(fd: int) -> None:
        if failing.is_set():
            failing.clear()
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(group_commit, "sync_file", sync)
    db = tmp_path / "emu.db"
    with (
        EmulatorServer(port=0, db_path=str(db)) as server,
        grpc.insecure_channel(server.address) as ch,
    ):
        stub = HubStub(ch, "default")
        kept = start(stub)
        failing.set()
        with pytest.raises(grpc.RpcError) as first:
            start(stub)
        assert first.value.code() == grpc.StatusCode.UNAVAILABLE
        # Its batch's error (or, if a commit of the server's own went first, the one for the commits after it).
        assert "save the change to disk" in (first.value.details() or "") or "restart it" in (
            first.value.details() or ""
        )
        error_id = (first.value.details() or "").split("(error ")[1][:12]
        with pytest.raises(grpc.RpcError) as later:  # its own sync would succeed; it follows the lost frames
            start(stub)
        assert later.value.code() == grpc.StatusCode.UNAVAILABLE
        assert f"earlier write to disk failed (error {error_id}); restart it" in (later.value.details() or "")
        stub.Hello(empty_pb2.Empty(), timeout=30)  # a health ping and reads are still answered
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId=kept), timeout=30).exists
    with (  # a restart on the same file serves writes again
        EmulatorServer(port=0, db_path=str(db)) as server,
        grpc.insecure_channel(server.address) as ch,
    ):
        stub = HubStub(ch, "default")
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId=kept), timeout=30).exists
        assert stub.GetInstance(pb.GetInstanceRequest(instanceId=start(stub)), timeout=30).exists
