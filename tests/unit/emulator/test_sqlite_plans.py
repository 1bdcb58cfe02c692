"""The SQLite hot path (work fetching, wake-up times, per-instance reads) never scans a whole table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dtscale_emulator.storage import EntityRecord, InstanceRecord, NameFilter, SqliteBackend


@pytest.fixture
def store() -> Iterator[SqliteBackend]:
    backend = SqliteBackend(None)
    with backend.transaction() as tx:
        for i in range(50):
            iid = f"i{i}"
            tx.put_instance(
                InstanceRecord("h", iid, "e", "O", 0, i, i, lock_token="t" if i % 2 else None, lock_expires=i)
            )
            tx.add_message("h", iid, b"m", i)
            tx.add_activity("h", iid, 1, "A", None, b"r")
            tx.put_entity(EntityRecord("h", f"@c@{i}", None, i))
            tx.add_message("h", f"@c@{i}", b"op", i)
    yield backend
    backend.close()


def _plans(store: SqliteBackend, statements: list[str]) -> list[str]:
    conn = store._conn
    details = []
    for sql in statements:
        if sql.lstrip().upper().startswith("SELECT"):
            # Traced statements have their parameters inlined, so they can be explained as they are.
            details.extend(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
    return details


def test_hot_path_queries_use_indexes(store: SqliteBackend) -> None:
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    accept = NameFilter({"O": frozenset()})
    versioned = NameFilter({"O": frozenset({"2"}), "A": frozenset({"1", "2"}), "B": frozenset()})
    with store.transaction() as tx:
        tx.ready_instances("h", 100, NameFilter(), 8)
        tx.ready_instances("h", 100, accept, 8)
        tx.ready_instances("h", 100, versioned, 8)
        tx.ready_activities("h", 100, NameFilter(), 8)
        tx.ready_activities("h", 100, NameFilter({"A": frozenset()}), 8)
        tx.ready_activities("h", 100, versioned, 8)
        tx.ready_entities("h", 100, 8)
        tx.ready_entities("h", 100, 8, ["c"])
        tx.next_message_time("h", 10)
        tx.next_lease_expiry("h", 10)
        tx.visible_messages("h", "i1", 100)
        tx.entity_operations("h", "@c@1", 100, 8)
        tx.entity_operations("h", "@c@1", 100, 8, "orch")
        tx.history("h", "i1")
        tx.get_instance("h", "i1")
        tx.child_ids("h", "i1")
    store._conn.set_trace_callback(None)
    plans = _plans(store, statements)
    assert plans, "no statements were traced"
    # A full scan or a sort/group over a temporary B-tree would make each fetch cost grow with the backlog.
    slow = [p for p in plans if (p.startswith("SCAN ") and "CONSTANT" not in p) or "TEMP B-TREE" in p]
    assert not slow, slow
