"""A store written before instances had an integer key is rewritten once when opened: histories keyed by ``ikey``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.ops.clock import SystemClock
from dtscale_emulator.storage import InstanceRecord, SqliteBackend

# The two tables as stores made them before (the other tables did not change).
_OLD_TABLES = """
CREATE TABLE instances (
    hub TEXT NOT NULL, instance_id TEXT NOT NULL, execution_id TEXT NOT NULL, name TEXT NOT NULL,
    version TEXT, status INTEGER NOT NULL, input TEXT, output TEXT, custom_status TEXT, failure BLOB,
    tags TEXT NOT NULL DEFAULT '{{}}', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    completed_at INTEGER, scheduled_start INTEGER, parent_instance_id TEXT, parent_execution_id TEXT,
    parent_task_id INTEGER, lock_token TEXT, lock_expires INTEGER{trace},
    PRIMARY KEY (hub, instance_id)
);
CREATE INDEX ix_instances_created ON instances (hub, created_at);
CREATE TABLE history (
    hub TEXT NOT NULL, instance_id TEXT NOT NULL, seq INTEGER NOT NULL, event BLOB NOT NULL,
    PRIMARY KEY (hub, instance_id, seq)
) WITHOUT ROWID;
"""
# Created in this order (row IDs 1..4), with IDs that sort in another.
_IDS = ["m", "c", "x", "a"]


def _old_store(path: Path, trace_column: bool) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(_OLD_TABLES.format(trace=", trace_context BLOB" if trace_column else ""))
    for n, iid in enumerate(_IDS):
        conn.execute(
            "INSERT INTO instances (hub, instance_id, execution_id, name, status, created_at, updated_at, "
            "completed_at) VALUES ('h', ?, 'e', 'O', 1, ?, ?, ?)",
            (iid, n, n, n),
        )
    for iid in sorted(_IDS):
        conn.executemany(
            "INSERT INTO history VALUES ('h', ?, ?, ?)", [(iid, seq, f"{iid}{seq}".encode()) for seq in range(3)]
        )
    conn.execute("INSERT INTO history VALUES ('h', 'gone', 0, x'00')")  # no instance: nothing can read it
    conn.commit()
    conn.close()


@pytest.mark.parametrize("trace_column", [True, False], ids=["with-trace", "before-trace"])
def test_an_older_store_gets_histories_keyed_by_instance_on_open(tmp_path: Path, trace_column: bool) -> None:
    path = tmp_path / "old.db"
    _old_store(path, trace_column)
    backend = SqliteBackend(str(path))
    try:
        conn = backend._conn
        assert [r[1] for r in conn.execute("PRAGMA table_info(history)")] == ["ikey", "seq", "event"]
        # Keys follow the order the instances were created in, and each history moved with its instance.
        keys = dict(conn.execute("SELECT instance_id, ikey FROM instances"))
        assert [iid for iid, _ in sorted(keys.items(), key=lambda kv: kv[1])] == _IDS
        assert conn.execute("SELECT COUNT(*) FROM history").fetchone()[0] == 3 * len(_IDS)
        with backend.transaction() as tx:
            for iid in _IDS:
                assert tx.history("h", iid) == [f"{iid}{seq}".encode() for seq in range(3)]
            tx.put_instance(InstanceRecord("h", "new", "e", "O", status=0, created_at=9, updated_at=9))
            tx.append_history("h", "new", [b"n0"])
            assert tx.history("h", "new") == [b"n0"]
        assert keys.items() <= dict(conn.execute("SELECT instance_id, ikey FROM instances")).items()
        assert conn.execute("SELECT ikey FROM instances WHERE instance_id = 'new'").fetchone()[0] > max(keys.values())
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'instances'")}
        assert {"sqlite_autoindex_instances_1", "ix_instances_status", "ix_instances_created_at"} <= indexes
        assert "ix_instances_created" not in indexes
        assert Engine(backend, SystemClock()).purge("h", ["c", "a"], recursive=False) == 2
        assert conn.execute("SELECT COUNT(*) FROM history").fetchone()[0] == 3 * 2 + 1
    finally:
        backend.close()
    SqliteBackend(str(path)).close()  # a second open finds nothing to do


def test_a_new_key_is_never_given_twice(tmp_path: Path) -> None:
    # The newest instance deleted, the next one must not take its key (a leftover history row would be its).
    backend = SqliteBackend(str(tmp_path / "store.db"))
    try:
        with backend.transaction() as tx:
            tx.put_instance(InstanceRecord("h", "a", "e", "O", status=1, created_at=1, updated_at=1))
        first = backend._conn.execute("SELECT ikey FROM instances").fetchone()[0]
        with backend.transaction() as tx:
            tx.delete_instance("h", "a")
            tx.put_instance(InstanceRecord("h", "b", "e", "O", status=1, created_at=2, updated_at=2))
        assert backend._conn.execute("SELECT ikey FROM instances").fetchone()[0] > first
    finally:
        backend.close()
