"""The store's file under attack, with real emulator processes: other names for a store in use, bad files at start."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from tests.support.reliability import env, free_port, kill, start_emulator

pytestmark = pytest.mark.adversarial


def _emulator(db: Path | str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m dtscale_emulator --db db`` to completion (it is expected to refuse to start)."""
    return subprocess.run(
        [sys.executable, "-m", "dtscale_emulator", "--db", str(db), "--port", str(free_port()), "--no-dashboard",
         *extra],
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


def _leases(db: Path) -> list[tuple[str, str]]:
    """The instances holding a lease, read through a connection of the test's own."""
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT instance_id, lock_token FROM instances WHERE lock_token IS NOT NULL").fetchall()
    finally:
        conn.close()


def _symlink(db: Path) -> Path:
    link = db.parent / "elsewhere" / "alias.db"
    link.parent.mkdir()
    link.symlink_to(db)
    return link


def _hard_link(db: Path) -> Path:
    link = db.parent / "elsewhere" / "second-name.db"
    link.parent.mkdir()
    os.link(db, link)
    return link


@pytest.mark.parametrize("other_name", [_symlink, _hard_link], ids=["symlink", "hard-link"])
def test_a_second_emulator_on_another_name_of_the_store_refuses_and_leaves_the_leases(
    tmp_path: Path, other_name: Callable[[Path], Path]
) -> None:
    db = tmp_path / "emu.db"
    port = free_port()
    first = start_emulator(db, port, "--no-dashboard")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.TaskHubSidecarServiceStub(channel)
            meta = [("taskhub", "default")]
            stub.StartInstance(pb.CreateInstanceRequest(instanceId="held", name="Orch"), metadata=meta, timeout=10)
            stream = stub.GetWorkItems(pb.GetWorkItemsRequest(), metadata=meta, timeout=60)
            item = next(i for i in stream if i.HasField("orchestratorRequest"))
            leased = _leases(db)
            assert [iid for iid, _ in leased] == ["held"]
            second = _emulator(other_name(db))
            assert second.returncode == 1
            assert "already served by another emulator" in second.stderr
            assert f"(process {first.pid})" in second.stderr
            assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
            assert _leases(db) == leased  # the refused start released nothing
            # The first emulator still takes the completion of the work item it leased.
            stub.CompleteOrchestratorTask(
                pb.OrchestratorResponse(instanceId="held", completionToken=item.completionToken),
                metadata=meta,
                timeout=10,
            )
            stream.cancel()
    finally:
        kill(first)


def _garbage(folder: Path) -> Path:
    path = folder / "garbage.db"
    path.write_bytes(bytes(range(256)) * 64)
    return path


def _real_store(folder: Path, name: str) -> Path:
    from dtscale_emulator.storage import InstanceRecord, SqliteBackend

    path = folder / name
    backend = SqliteBackend(str(path))
    with backend.transaction() as tx:
        for i in range(2000):
            tx.put_instance(InstanceRecord("default", f"i{i:05}", "e", "Orch", 1, 1, 1, input="x" * 200))
    backend.close()
    return path


def _truncated(folder: Path) -> Path:
    path = _real_store(folder, "truncated.db")
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)
    return path


def _future(folder: Path) -> Path:
    path = _real_store(folder, "future.db")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    return path


def _read_only(folder: Path) -> Path:
    path = _real_store(folder, "read-only.db")
    path.chmod(0o444)
    return path


def _missing_folder(folder: Path) -> Path:
    return folder / "no-such-folder" / "emu.db"


def _damaged(folder: Path) -> Path:
    path = _real_store(folder, "damaged.db")
    conn = sqlite3.connect(path)
    page_size, pages = (conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count"))
    conn.close()
    with open(path, "r+b") as f:  # one page in the middle of the file overwritten
        f.seek((pages // 2) * page_size)
        f.write(b"\xa5" * page_size)
    return path


def _foreign(folder: Path) -> Path:
    path = folder / "someone-elses.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT);"
        "INSERT INTO messages (body) VALUES ('hello');"
    )
    conn.close()
    return path


BAD_FILES = {
    "garbage": (_garbage, "not a SQLite database"),
    "truncated": (_truncated, "damaged"),
    "future-version": (_future, "schema version 999"),
    "read-only": (_read_only, "read-only"),
    "missing-folder": (_missing_folder, "does not exist"),
    "damaged-page": (_damaged, "damaged"),
    "foreign": (_foreign, "not the emulator's (customers)"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_store_file_is_refused_in_one_line_and_left_as_it_was(tmp_path: Path, case: str) -> None:
    make, cause = BAD_FILES[case]
    path = make(tmp_path)
    before = path.read_bytes() if path.exists() else None
    result = _emulator(path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr  # one line
    assert f"cannot use {path} as the store" in result.stderr and cause in result.stderr, result.stderr
    assert "listening on" not in result.stdout
    if before is not None:
        assert path.read_bytes() == before  # no WAL switch, no version written, no tables added
        log = Path(f"{path}-wal")
        assert not log.exists() or log.stat().st_size == 0  # (a WAL store's reader may leave an empty one)
    if case == "foreign":
        assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the advice uses the sqlite3 shell, not installed here")
def test_the_recovery_the_refusal_advises_gives_a_store_the_emulator_serves(tmp_path: Path) -> None:
    damaged = _damaged(tmp_path)
    refusal = _emulator(damaged).stderr
    command = refusal.split("into a new store with: ")[1].split(" (then start with")[0]
    salvage = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120)
    assert salvage.returncode == 0, salvage.stderr
    recovered = Path(f"{damaged}.recovered")
    rows = sqlite3.connect(recovered).execute("SELECT COUNT(*) FROM instances").fetchone()[0]
    assert 0 < rows <= 2000
    port = free_port()
    kill(start_emulator(recovered, port, "--no-dashboard"), 15)


def test_skip_integrity_check_serves_a_store_without_reading_every_page(tmp_path: Path) -> None:
    damaged = _damaged(tmp_path)
    kill(start_emulator(damaged, free_port(), "--no-dashboard", "--skip-integrity-check"), 15)
