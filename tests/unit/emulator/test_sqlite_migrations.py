"""The store's schema version: a new store starts at the latest, and each migration runs from the version before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dtscale_emulator.errors import StoreUnusableError
from dtscale_emulator.protocol import StringValue, pb
from dtscale_emulator.storage import SqliteBackend
from dtscale_emulator.storage import sqlite_migrations as migrations
from dtscale_emulator.storage.sqlite_migrations import LATEST, MIGRATIONS, Migration


def _version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _store_at(path: Path, version: int) -> sqlite3.Connection:
    """A store as the release at ``version`` left it: the latest layout taken back by hand where it differs."""
    SqliteBackend(str(path)).close()
    conn = sqlite3.connect(path, isolation_level=None)
    if version < 3:
        conn.execute("CREATE INDEX ix_instances_parent ON instances (hub, parent_instance_id)")
        conn.execute("CREATE INDEX ix_instances_created ON instances (hub, created_at)")
    if version < 2:
        conn.execute("ALTER TABLE messages DROP COLUMN caller")
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


def _indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_the_migrations_are_numbered_in_order_from_one() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST + 1))


def test_a_new_store_starts_at_the_latest_version(tmp_path: Path) -> None:
    SqliteBackend(str(tmp_path / "new.db")).close()
    assert _version(tmp_path / "new.db") == LATEST


def test_version_1_to_2_records_the_caller_of_each_queued_entity_call(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    conn = _store_at(path, 1)
    called = pb.HistoryEvent(
        entityOperationCalled=pb.EntityOperationCalledEvent(
            requestId="r", operation="add", parentInstanceId=StringValue(value="orch")
        )
    )
    signaled = pb.HistoryEvent(entityOperationSignaled=pb.EntityOperationSignaledEvent(requestId="s", operation="add"))
    for event in (called, signaled):
        conn.execute(
            "INSERT INTO messages (hub, instance_id, event, visible_at) VALUES ('h', '@counter@a', ?, 0)",
            (event.SerializeToString(),),
        )
    conn.close()
    SqliteBackend(str(path)).close()
    with sqlite3.connect(path) as conn:
        callers = [r[0] for r in conn.execute("SELECT caller FROM messages ORDER BY id")]
    assert callers == ["orch", None]
    assert _version(path) == LATEST


def test_version_2_to_3_replaces_the_full_indexes(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    _store_at(path, 2).close()
    assert {"ix_instances_parent", "ix_instances_created"} <= _indexes(path)
    SqliteBackend(str(path)).close()
    indexes = _indexes(path)
    assert not {"ix_instances_parent", "ix_instances_created"} & indexes
    assert {"ix_instances_children", "ix_instances_lease", "ix_instances_created_at"} <= indexes
    assert _version(path) == LATEST


def test_a_store_at_the_latest_version_runs_no_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "latest.db"
    SqliteBackend(str(path)).close()
    ran: list[int] = []
    recording = tuple(Migration(m.version, m.summary, lambda db, v=m.version: ran.append(v)) for m in MIGRATIONS)
    monkeypatch.setattr(migrations, "MIGRATIONS", recording)
    SqliteBackend(str(path)).close()
    assert ran == []


def test_a_failed_migration_leaves_the_version_it_started_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "v2.db"
    _store_at(path, 2).close()

    def broken(db: sqlite3.Connection) -> None:
        db.execute("DROP INDEX ix_instances_parent")
        raise RuntimeError("disk gone")

    monkeypatch.setattr(migrations, "MIGRATIONS", (*MIGRATIONS[:2], Migration(3, "broken", broken)))
    with pytest.raises(RuntimeError, match="disk gone"):
        SqliteBackend(str(path))
    assert _version(path) == 2 and "ix_instances_parent" in _indexes(path)  # rolled back as a whole
    monkeypatch.undo()
    SqliteBackend(str(path)).close()
    assert _version(path) == LATEST


def test_a_store_from_a_newer_release_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    _store_at(path, LATEST).execute(f"PRAGMA user_version = {LATEST + 1}")
    with pytest.raises(StoreUnusableError, match=rf"schema version {LATEST + 1}.*up to {LATEST}"):
        SqliteBackend(str(path))
