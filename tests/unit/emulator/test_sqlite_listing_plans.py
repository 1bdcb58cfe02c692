"""Instance listing and purging on SQLite: the plans stay bounded by the page, and the pages are right.

A listing over a large store must never walk the instance rows themselves (wide, with payloads) filtering as it
goes, nor sort an unbounded set: every statement either reads a covering index or looks rows up by their key.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.ops.clock import SystemClock
from dtscale_emulator.storage import InstanceQueryArgs, InstanceRecord, SqliteBackend, sqlite_listing

TERMINAL = (1, 3, 5)


@pytest.fixture
def store() -> Iterator[SqliteBackend]:
    rng = random.Random(7)
    backend = SqliteBackend(None)
    with backend.transaction() as tx:
        for i in range(400):
            status = rng.choice((0, 1, 1, 1, 3, 5, 6))
            created = rng.randrange(1000)
            record = InstanceRecord(
                "h", f"{rng.choice('abc')}{i:04d}", "e", "O", status=status, created_at=created, updated_at=created,
                completed_at=created + 5 if status in TERMINAL else None, input='"in"',
            )  # fmt: skip
            tx.put_instance(record)
            tx.append_history("h", record.instance_id, [b"x", b"y"], 0)
        tx.put_instance(InstanceRecord("other", "a0000", "e", "O", status=1, created_at=1, updated_at=1))
    yield backend
    backend.close()


QUERIES = [
    InstanceQueryArgs(),
    InstanceQueryArgs(statuses=[1]),
    InstanceQueryArgs(statuses=[4]),
    InstanceQueryArgs(statuses=[0, 3], after_id="b0100"),
    InstanceQueryArgs(created_from=100, created_to=300),
    InstanceQueryArgs(created_from=900),
    InstanceQueryArgs(created_to=50, statuses=[1, 5]),
    InstanceQueryArgs(id_prefix="b"),
    InstanceQueryArgs(id_prefix="c0", statuses=[1], created_from=200, limit=7),
    InstanceQueryArgs(completed_from=100, completed_to=600, terminal_only=True),
    InstanceQueryArgs(statuses=[0, 1], terminal_only=True, created_to=700, after_id="a0200"),
    InstanceQueryArgs(terminal_only=True, limit=1000),
]


def _expected(store: SqliteBackend, args: InstanceQueryArgs) -> list[str]:
    rows = store._conn.execute(
        "SELECT instance_id, status, created_at, completed_at FROM instances WHERE hub = 'h'"
    ).fetchall()
    statuses = sqlite_listing.wanted_statuses(args)

    def keep(iid: str, status: int, created: int, completed: int | None) -> bool:
        checks = [
            status in statuses,
            args.created_from is None or created >= args.created_from,
            args.created_to is None or created < args.created_to,
            args.completed_from is None or (completed is not None and completed >= args.completed_from),
            args.completed_to is None or (completed is not None and completed < args.completed_to),
            args.after_id is None or iid > args.after_id,
            not args.id_prefix or iid.startswith(args.id_prefix),
        ]
        return all(checks)

    return sorted(r[0] for r in rows if keep(*r))[: args.limit]


@pytest.mark.parametrize("probe", [sqlite_listing.RANGE_PROBE, 1], ids=["range", "walk"])
def test_pages_match_the_filters(store: SqliteBackend, probe: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Both ways of finding a page (reading a small time range, walking the statuses in ID order) give the same.
    monkeypatch.setattr(sqlite_listing, "RANGE_PROBE", probe)
    for args in QUERIES:
        with store.transaction() as tx:
            found = [r.instance_id for r in tx.query_instances("h", args)]
        assert found == _expected(store, args), args


def test_every_query_matches_something_in_the_fixture(store: SqliteBackend) -> None:
    # Guards the comparison above against passing on empty pages only.
    non_empty = [args for args in QUERIES if _expected(store, args)]
    assert len(non_empty) >= len(QUERIES) - 1  # statuses=[4] (CANCELED) matches nothing on purpose


def _plans(store: SqliteBackend, statements: list[str]) -> dict[str, list[str]]:
    found = {}
    for sql in statements:
        if sql.lstrip().upper().startswith(("SELECT", "DELETE", "UPDATE")):
            # Traced statements have their parameters inlined, so they can be explained as they are.
            found[sql] = [row[3] for row in store._conn.execute("EXPLAIN QUERY PLAN " + sql)]
    return found


def _unbounded(sql: str, plan: list[str]) -> list[str]:
    bad = []
    for step in plan:
        on_rows = step.startswith(("SCAN instances", "SCAN history", "SEARCH instances", "SEARCH history"))
        by_key = "COVERING INDEX" in step or "instance_id=?" in step or "PRIMARY KEY" in step
        if on_rows and not by_key:
            bad.append(f"{step}   <- {sql}")
        if step.startswith(("SCAN instances", "SCAN history")):
            bad.append(f"{step}   <- {sql}")
        # Only the time-range read sorts, and only after the probe found the range smaller than its cap.
        if "TEMP B-TREE" in step and "ix_instances_created_at" not in sql and "ix_instances_completed_at" not in sql:
            bad.append(f"{step}   <- {sql}")
    return bad


@pytest.mark.parametrize("probe", [sqlite_listing.RANGE_PROBE, 1], ids=["range", "walk"])
def test_listing_and_purge_plans_are_bounded(store: SqliteBackend, probe: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_listing, "RANGE_PROBE", probe)
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    for args in QUERIES:
        with store.transaction() as tx:
            tx.query_instances("h", args)
    with store.transaction() as tx:
        tx.get_instance("h", "a0001")
        tx.history("h", "a0001")
    Engine(store, SystemClock()).purge("h", ["a0001", "b0002", "c0003"], recursive=True)
    store._conn.set_trace_callback(None)
    plans = _plans(store, statements)
    assert len(plans) > len(QUERIES), "too few statements were traced"
    assert any(sql.startswith("DELETE FROM history") for sql in plans), "the purge's deletes were not explained"
    bad = [line for sql, plan in plans.items() for line in _unbounded(sql, plan)]
    assert not bad, "\n".join(bad)


def test_an_older_store_gets_the_listing_indexes_on_open(tmp_path: object) -> None:
    # A database made before the listing indexes existed has the narrow time indexes only.
    import sqlite3
    from pathlib import Path

    path = str(Path(str(tmp_path)) / "old.db")
    SqliteBackend(path).close()
    conn = sqlite3.connect(path)
    for name in ("ix_instances_status", "ix_instances_created_at", "ix_instances_completed_at"):
        conn.execute(f"DROP INDEX {name}")
    conn.execute("CREATE INDEX ix_instances_created ON instances (hub, created_at)")
    conn.execute("CREATE INDEX ix_instances_completed ON instances (hub, completed_at)")
    conn.execute("PRAGMA user_version = 2")  # the version before these indexes were replaced
    conn.commit()
    conn.close()
    SqliteBackend(path).close()
    conn = sqlite3.connect(path)
    names = {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'instances'")
    }
    conn.close()
    assert {"ix_instances_status", "ix_instances_created_at", "ix_instances_completed_at"} <= names
    assert not {"ix_instances_created", "ix_instances_completed"} & names
