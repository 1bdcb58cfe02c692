"""A filter purge moves its write-ahead log back into the database itself, from a connection of its own."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from dtscale_emulator.engine import queries
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.ops.clock import SystemClock
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import InstanceRecord, SqliteBackend


def _log_frames(path: Path) -> tuple[int, int]:
    """(frames in the log, frames of it already copied back), as a passive checkpoint reports them."""
    conn = sqlite3.connect(path)
    try:
        _, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        conn.close()
    return frames, copied


def _seeded(path: Path, count: int) -> SqliteBackend:
    backend = SqliteBackend(str(path))
    backend._conn.execute("PRAGMA wal_autocheckpoint=0")  # only explicit checkpoints, so the test sees them
    with backend.transaction() as tx:
        for i in range(count):
            tx.put_instance(InstanceRecord("h", f"i{i:04d}", "e", "O", status=1, created_at=i, updated_at=i))
            tx.append_history("h", f"i{i:04d}", [b"x" * 200] * 4, 0)
    return backend


def test_checkpoint_copies_the_log_back_without_the_store_lock(tmp_path: Path) -> None:
    backend = _seeded(tmp_path / "s.db", 50)
    try:
        with backend._lock:  # held by "another call": the checkpoint must not need it
            backend.checkpoint()
        frames, copied = _log_frames(tmp_path / "s.db")
        assert frames > 0 and copied == frames
    finally:
        backend.close()


def test_a_filter_purge_checkpoints_between_its_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queries, "PURGE_MAX_PAGE", 100)
    monkeypatch.setattr(queries, "PURGE_CHECKPOINT_EVERY", 100)
    backend = _seeded(tmp_path / "p.db", 250)
    calls: list[int] = []
    real = backend.checkpoint

    def counted() -> None:
        calls.append(1)
        real()

    backend.checkpoint = counted  # type: ignore[method-assign]
    try:
        engine = Engine(backend, SystemClock())
        request = pb.PurgeInstancesRequest(purgeInstanceFilter=pb.PurgeInstanceFilter())
        deleted, done = asyncio.run(queries.purge(engine, "h", request))
        assert (deleted, done) == (250, True)
        assert len(calls) == 3  # one per step of 100 instances, the last one at the end
        frames, copied = _log_frames(tmp_path / "p.db")
        assert copied == frames
    finally:
        backend.close()


def test_an_in_memory_store_has_nothing_to_checkpoint() -> None:
    backend = SqliteBackend(None)
    try:
        backend.checkpoint()  # no log, no second connection: nothing happens
        assert backend._checkpointer is None
    finally:
        backend.close()
