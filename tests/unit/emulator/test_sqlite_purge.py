"""Purging on SQLite: a batch of instances is deleted with a few statements, a filter purge sizes its steps to a
time budget, goes oldest first and checkpoints the log every so many instances, and the rarely used indexes cover
only the rows they are for."""

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

RUNNING, COMPLETED, FAILED = 0, 1, 3


def _put(backend: SqliteBackend, iid: str, status: int, parent: str | None = None) -> None:
    with backend.transaction() as tx:
        tx.put_instance(
            InstanceRecord("h", iid, "e", "O", status=status, created_at=1, updated_at=1, parent_instance_id=parent)
        )
        tx.append_history("h", iid, [b"a", b"b"], 0)
        tx.add_message("h", iid, b"m", 0)
        tx.add_activity("h", iid, 1, "A", None, b"r")


def _left(backend: SqliteBackend, table: str) -> set[str]:
    if table == "history":  # keyed by the instance's integer key
        sql = "SELECT DISTINCT i.instance_id FROM history h JOIN instances i ON i.ikey = h.ikey WHERE i.hub = 'h'"
        return {r[0] for r in backend._conn.execute(sql)}
    return {r[0] for r in backend._conn.execute(f"SELECT DISTINCT instance_id FROM {table} WHERE hub = 'h'")}


def test_a_batch_purge_deletes_only_finished_instances_with_all_they_stored() -> None:
    backend = SqliteBackend(None)
    for i in range(1200):  # more than one statement's batch of IDs
        _put(backend, f"i{i:04d}", (COMPLETED, FAILED, RUNNING)[i % 3])
    ids = [f"i{i:04d}" for i in range(1200)] + ["i0000", "missing"]  # a duplicate and an unknown ID
    assert Engine(backend, SystemClock()).purge("h", ids, recursive=False) == 800
    running = {f"i{i:04d}" for i in range(2, 1200, 3)}
    for table in ("instances", "history", "messages", "activities"):
        assert _left(backend, table) == running, table
    backend.close()


def test_a_recursive_purge_follows_finished_children_only() -> None:
    backend = SqliteBackend(None)
    _put(backend, "root", COMPLETED)
    _put(backend, "done-child", COMPLETED, parent="root")
    _put(backend, "grandchild", FAILED, parent="done-child")
    _put(backend, "busy-child", RUNNING, parent="root")
    _put(backend, "under-busy", COMPLETED, parent="busy-child")
    _put(backend, "other", COMPLETED)
    assert Engine(backend, SystemClock()).purge("h", ["root"], recursive=True) == 3
    assert _left(backend, "instances") == {"busy-child", "under-busy", "other"}
    assert _left(backend, "history") == {"busy-child", "under-busy", "other"}
    backend.close()


def test_a_batch_purge_takes_a_few_statements_not_several_per_instance() -> None:
    backend = SqliteBackend(None)
    for i in range(300):
        _put(backend, f"i{i:04d}", COMPLETED)
    statements: list[str] = []
    backend._conn.set_trace_callback(statements.append)
    Engine(backend, SystemClock()).purge("h", [f"i{i:04d}" for i in range(300)], recursive=True)
    backend._conn.set_trace_callback(None)
    assert len(statements) <= 12, statements[:20]  # it was a read and four deletes per instance (1,500)
    backend.close()


@pytest.mark.parametrize(
    ("size", "seconds", "expected"),
    [(25, 0.001, 50), (50, 0.001, 100), (100, 0.001, 100), (100, 0.5, 50), (1, 0.5, 1), (50, 0.015, 50)],
)
def test_a_filter_purge_step_halves_when_slow_and_grows_back_when_quick(
    size: int, seconds: float, expected: int
) -> None:
    assert queries.PURGE_STEP_SECONDS == 0.02 and queries.PURGE_MAX_PAGE == 100
    assert queries.next_purge_page(size, seconds) == expected


def _seeded(path: Path, count: int) -> SqliteBackend:
    backend = SqliteBackend(str(path))
    with backend.transaction() as tx:
        for i in range(count):
            tx.put_instance(InstanceRecord("h", f"i{i:05d}", "e", "O", status=COMPLETED, created_at=i, updated_at=i))
    return backend


def _filter_purge(backend: SqliteBackend) -> tuple[int, bool]:
    request = pb.PurgeInstancesRequest(purgeInstanceFilter=pb.PurgeInstanceFilter())
    return asyncio.run(queries.purge(Engine(backend, SystemClock()), "h", request))


def test_a_filter_purge_grows_its_steps_while_they_are_quick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _seeded(tmp_path / "g.db", 3000)
    monkeypatch.setattr(queries, "PURGE_STEP_SECONDS", 3600.0)  # every step counts as quick
    monkeypatch.setattr(queries, "PURGE_MAX_PAGE", 1000)
    sizes: list[int] = []
    real = Engine.purge

    def counted(self: Engine, hub: str, ids: list[str], recursive: bool) -> int:
        sizes.append(len(ids))
        return real(self, hub, ids, recursive)

    monkeypatch.setattr(Engine, "purge", counted)
    try:
        assert _filter_purge(backend) == (3000, True)
        assert sizes == [100, 200, 400, 800, 1000, 500]
    finally:
        backend.close()


def test_a_filter_purge_checkpoints_every_so_many_instances_and_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _seeded(tmp_path / "c.db", 1150)
    monkeypatch.setattr(queries, "PURGE_MAX_PAGE", 100)
    monkeypatch.setattr(queries, "PURGE_CHECKPOINT_EVERY", 500)
    calls: list[int] = []
    real = backend.checkpoint
    backend.checkpoint = lambda: (calls.append(1), real())[1]  # type: ignore[method-assign]
    try:
        assert _filter_purge(backend) == (1150, True)
        assert len(calls) == 3  # after 500, after 1,000, and the last 150 at the end
    finally:
        backend.close()


def _indexes(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'instances'")
        return {name: sql or "" for name, sql in rows}
    finally:
        conn.close()


def test_an_older_store_gets_the_partial_parent_and_lease_indexes_on_open(tmp_path: Path) -> None:
    # Stores made before had indexes over every row for the parent and the lease token.
    path = tmp_path / "old.db"
    backend = SqliteBackend(str(path))
    _put(backend, "parent", COMPLETED)
    _put(backend, "child", COMPLETED, parent="parent")
    backend.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX ix_instances_children")
    conn.execute("CREATE INDEX ix_instances_parent ON instances (hub, parent_instance_id)")
    conn.execute("CREATE INDEX ix_instances_lock ON instances (lock_token)")
    conn.execute("PRAGMA user_version = 2")  # the version before these indexes were replaced
    conn.commit()
    conn.close()
    backend = SqliteBackend(str(path))
    try:
        indexes = _indexes(path)
        assert "ix_instances_parent" not in indexes and "ix_instances_lock" not in indexes
        assert "WHERE parent_instance_id IS NOT NULL" in indexes["ix_instances_children"]
        with backend.transaction() as tx:
            assert tx.child_ids("h", "parent") == ["child"]
    finally:
        backend.close()


def test_lease_release_and_child_lookups_read_their_partial_indexes() -> None:
    backend = SqliteBackend(None)
    plans = {
        sql: " ".join(r[3] for r in backend._conn.execute("EXPLAIN QUERY PLAN " + sql))
        for sql in (
            "UPDATE instances SET lock_token = NULL, lock_expires = NULL WHERE lock_token IS NOT NULL",
            "SELECT instance_id FROM instances WHERE hub = 'h' AND parent_instance_id IN ('a', 'b')",
        )
    }
    backend.close()
    assert [p.split(" USING ")[1].split()[1] for p in plans.values()] == ["ix_instances_lease", "ix_instances_children"]


def test_a_purge_of_everything_older_than_a_time_goes_oldest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = SqliteBackend(str(tmp_path / "a.db"))
    created = {}
    with backend.transaction() as tx:
        for i in range(40):
            iid = f"i{i:02d}"
            created[iid] = (40 - i) // 2  # ID order is the reverse of age order, with ties
            status = RUNNING if i % 7 == 0 else (COMPLETED, FAILED)[i % 2]
            tx.put_instance(InstanceRecord("h", iid, "e", "O", status=status, created_at=created[iid], updated_at=1))
    monkeypatch.setattr(queries, "PURGE_PAGE", 3)
    monkeypatch.setattr(queries, "PURGE_MAX_PAGE", 3)
    order: list[str] = []
    real = Engine.purge

    def recorded(self: Engine, hub: str, ids: list[str], recursive: bool) -> int:
        order.extend(ids)
        return real(self, hub, ids, recursive)

    monkeypatch.setattr(Engine, "purge", recorded)
    flt = pb.PurgeInstanceFilter()
    flt.createdTimeTo.FromMicroseconds(15)
    try:
        deleted, done = asyncio.run(
            queries.purge(Engine(backend, SystemClock()), "h", pb.PurgeInstancesRequest(purgeInstanceFilter=flt))
        )
        expected = [iid for iid in created if created[iid] < 15 and int(iid[1:]) % 7]
        assert (deleted, done) == (len(expected), True)
        assert sorted(order) == sorted(expected)
        assert [created[iid] for iid in order] == sorted(created[iid] for iid in order)  # oldest first
        assert _left(backend, "instances") == set(created) - set(expected)
    finally:
        backend.close()


def test_the_oldest_first_page_seeks_the_created_time_index() -> None:
    from dtscale_emulator.storage import InstanceQueryArgs
    from dtscale_emulator.storage.sqlite_listing import keys_by_age

    backend = SqliteBackend(None)
    statements: list[str] = []
    backend._conn.set_trace_callback(statements.append)
    args = InstanceQueryArgs(created_from=1, created_to=9, terminal_only=True)
    keys_by_age(backend._conn, "h", args, None)
    keys_by_age(backend._conn, "h", args, (3, 1, "x"))
    backend._conn.set_trace_callback(None)
    for sql in statements:
        plan = " ".join(r[3] for r in backend._conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "USING COVERING INDEX ix_instances_created_at" in plan and "TEMP B-TREE" not in plan, plan
    assert "(created_at,status,instance_id)>" in plan.replace(" ", "")  # the second one seeks to its position
    backend.close()
