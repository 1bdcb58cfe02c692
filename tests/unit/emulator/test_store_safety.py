"""The store's file: one emulator per file whatever names it, no foreign or damaged file adopted, durable commits."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from dtscale_emulator.__main__ import _server, build_parser
from dtscale_emulator.errors import DatabaseInUseError, StoreUnusableError
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import InstanceRecord, SqliteBackend
from dtscale_emulator.storage.lockfile import DatabaseLock
from dtscale_emulator.storage.sqlite_migrations import LATEST

pytestmark = pytest.mark.adversarial


def _store(path: Path, instances: int = 500) -> Path:
    backend = SqliteBackend(str(path))
    with backend.transaction() as tx:
        for i in range(instances):
            tx.put_instance(InstanceRecord("h", f"i{i:05}", "e", "Orch", 1, 1, 1, input="x" * 300))
    backend.close()
    return path


def _refused(path: Path, **kwargs: bool) -> str:
    with pytest.raises(StoreUnusableError) as refusal:
        SqliteBackend(str(path), **kwargs)
    message = str(refusal.value)
    assert message.startswith(f"cannot use {path} as the store: ") and "\n" not in message
    return message


# Finding 9: the lock belongs to the file, not to the path that names it ----------------------------------------
@pytest.mark.parametrize("name", ["symlink", "hard link"])
def test_another_name_for_a_store_in_use_is_refused(tmp_path: Path, name: str) -> None:
    db = tmp_path / "emu.db"
    first = SqliteBackend(str(db))
    other = tmp_path / "other" / "alias.db"
    other.parent.mkdir()
    if name == "symlink":
        other.symlink_to(db)
    else:
        os.link(db, other)
    try:
        with pytest.raises(DatabaseInUseError, match=rf"already served by another emulator \(process {os.getpid()}\)"):
            SqliteBackend(str(other))
    finally:
        first.close()
    SqliteBackend(str(other)).close()  # the lock went with the first backend


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="flock and fcntl locks meet elsewhere")
def test_on_linux_the_lock_is_on_the_database_file_itself(tmp_path: Path) -> None:
    lock = DatabaseLock(str(tmp_path / "emu.db"))
    try:
        assert lock.fallback is None and lock.created
        assert not (tmp_path / "emu.db.lock").exists()
    finally:
        lock.release()


def test_where_flock_meets_fcntl_locks_the_lock_falls_back_to_a_lock_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The BSDs, macOS, and Linux over NFS keep flock with fcntl locks: the probe lock is refused there.
    real_lockf = fcntl.lockf

    def lockf(fd: int, cmd: int, *args: int) -> None:
        if cmd & fcntl.LOCK_SH:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        real_lockf(fd, cmd, *args)

    monkeypatch.setattr(fcntl, "lockf", lockf)
    db = tmp_path / "emu.db"
    first = SqliteBackend(str(db))
    try:
        # The database file is not left flocked (SQLite's own locks would meet it), the lock file is held.
        with open(db, "rb") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert (tmp_path / "emu.db.lock").read_text() == f"{os.getpid()}\n"
        alias = tmp_path / "alias.db"
        alias.symlink_to(db)
        for name in (db, alias):
            with pytest.raises(DatabaseInUseError, match=rf"\(process {os.getpid()}\)"):
                SqliteBackend(str(name))
    finally:
        first.close()
    SqliteBackend(str(db)).close()


def test_a_store_with_several_hard_links_is_served_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = _store(tmp_path / "emu.db")
    os.link(db, tmp_path / "second-name.db")
    with caplog.at_level("WARNING", "dtscale_emulator"):
        SqliteBackend(str(db)).close()
    assert any(f"the store {db} has 2 hard links" in r.getMessage() for r in caplog.records)


# Finding 10: another application's file -------------------------------------------------------------------------
def _foreign(path: Path, script: str) -> bytes:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()
    return path.read_bytes()


def test_another_applications_file_is_refused_and_left_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    before = _foreign(
        path,
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, sender TEXT, body TEXT);"
        "INSERT INTO messages (sender, body) VALUES ('ann', 'hi');",
    )
    assert "not the emulator's (orders)" in _refused(path)
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    conn.close()


def test_a_file_whose_tables_only_share_the_emulators_names_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    before = _foreign(path, "CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT);")
    assert "its table messages lacks the emulator's columns (event, hub, instance_id, visible_at)" in _refused(path)
    assert path.read_bytes() == before


def test_a_view_is_another_applications_whatever_its_name(tmp_path: Path) -> None:
    path = _store(tmp_path / "emu.db", instances=1)
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE lock_requests; CREATE VIEW lock_requests AS SELECT 1;")
    conn.close()
    assert "not the emulator's (lock_requests)" in _refused(path)


def test_a_store_of_the_emulators_own_and_an_empty_file_are_served(tmp_path: Path) -> None:
    SqliteBackend(str(_store(tmp_path / "emu.db"))).close()
    (tmp_path / "empty.db").touch()
    SqliteBackend(str(tmp_path / "empty.db")).close()


# Finding 11: a damaged page ------------------------------------------------------------------------------------
def _damage_middle_page(path: Path) -> None:
    conn = sqlite3.connect(path)
    page_size, pages, free = (
        conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count", "freelist_count")
    )
    conn.close()
    assert free == 0  # every page is in use, so the one damaged is read by some query
    with open(path, "r+b") as f:
        f.seek((pages // 2) * page_size)
        f.write(b"\x5a" * page_size)


def test_a_damaged_page_is_found_at_start_and_the_refusal_says_how_to_recover(tmp_path: Path) -> None:
    path = _store(tmp_path / "emu.db")
    _damage_middle_page(path)
    before = path.read_bytes()
    message = _refused(path)
    assert "it is damaged (SQLite's quick_check: " in message
    assert "restore it from a backup" in message and f"sqlite3 {path} .dump" in message
    assert path.read_bytes() == before


def test_the_integrity_check_can_be_skipped(tmp_path: Path) -> None:
    path = _store(tmp_path / "emu.db")
    _damage_middle_page(path)
    SqliteBackend(str(path), integrity_check=False).close()  # opened as it is: no page read the damaged one


# Finding 12: files that are not a store this emulator can use ----------------------------------------------------
def test_a_newer_store_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = _store(tmp_path / "newer.db")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.close()
    before = path.read_bytes()
    assert f"schema version {LATEST + 1}, but this emulator knows versions up to {LATEST}" in _refused(path)
    assert path.read_bytes() == before  # still in rollback-journal mode: no switch to WAL


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b"", None),
        (b"not a database at all\n" * 200, "it is not a SQLite database (4400 bytes"),
        (b"SQLite format 3\x00", "it is not a SQLite database (16 bytes"),
    ],
    ids=["empty", "text", "header-only"],
)
def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path, content: bytes, cause: str | None) -> None:
    path = tmp_path / "file.db"
    path.write_bytes(content)
    if cause is None:
        SqliteBackend(str(path)).close()  # an empty file is a new store
    else:
        assert cause in _refused(path)
        assert path.read_bytes() == content


def test_a_read_only_store_and_a_missing_folder_are_refused(tmp_path: Path) -> None:
    path = _store(tmp_path / "emu.db")
    path.chmod(0o444)
    assert "the file is read-only" in _refused(path)
    missing = tmp_path / "gone" / "emu.db"
    assert f"the folder {missing.parent} does not exist" in _refused(missing)
    assert not missing.parent.exists()
    assert "it is a folder" in _refused(tmp_path)


def test_a_refused_file_keeps_no_lock(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    _foreign(path, "CREATE TABLE orders (id INTEGER PRIMARY KEY);")
    _refused(path)
    _refused(path)  # refused for what it holds, not as a file in use


# Finding 13: durable by default ---------------------------------------------------------------------------------
def test_commits_are_synced_by_default_and_normal_is_a_choice(tmp_path: Path) -> None:
    backend = SqliteBackend(str(tmp_path / "default.db"))
    assert backend.synchronous == "FULL"
    assert backend._conn.execute("PRAGMA fullfsync").fetchone()[0] == 1  # macOS: past the drive's cache too
    backend.close()
    backend = SqliteBackend(str(tmp_path / "normal.db"), "normal")
    assert backend.synchronous == "NORMAL"
    backend.close()
    server = EmulatorServer(port=0, db_path=str(tmp_path / "server.db"))
    assert server.backend.synchronous == "FULL"
    server.close()
    with pytest.raises(ValueError, match="durability must be one of"):
        SqliteBackend(str(tmp_path / "x.db"), "fast")


@pytest.mark.parametrize(("flags", "expected"), [([], "FULL"), (["--durability", "normal"], "NORMAL")])
def test_the_command_lines_durability_reaches_the_connection(tmp_path: Path, flags: list[str], expected: str) -> None:
    args = build_parser().parse_args(["--db", str(tmp_path / "emu.db"), "--port", "0", *flags])
    server = _server(args, ("default",), None)
    try:
        assert server.backend.synchronous == expected
    finally:
        server.close()


def test_an_unknown_durability_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--durability", "fast"])
    assert exit_.value.code == 2
    assert "--durability: invalid choice: 'fast' (choose from 'full', 'normal')" in capsys.readouterr().err
