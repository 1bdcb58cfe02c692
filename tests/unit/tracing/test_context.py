"""W3C trace context as protocol data, and what the emulator keeps of it."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from dtscale_emulator.engine import events
from dtscale_emulator.protocol import pb as emulator_pb
from dtscale_emulator.storage.sqlite import SqliteBackend
from durabletask import _trace_context as tc
from durabletask._proto import orchestrator_service_pb2 as pb

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_traceparent_round_trip_keeps_ids_flags_and_state() -> None:
    parent = tc.parse_traceparent(PARENT, "congo=t61rcWkgMzE")
    assert parent is not None
    proto = parent.to_proto()
    assert proto.traceParent == PARENT and proto.spanID == "b7ad6b7169203331"
    assert proto.traceState.value == "congo=t61rcWkgMzE"
    assert tc.from_proto(proto) == parent
    child = parent.child(0x1234)
    assert child.traceparent == "00-0af7651916cd43dd8448eb211c80319c-0000000000001234-01"


def test_malformed_or_zero_traceparents_are_ignored() -> None:
    for bad in ("", "00-abc", "00-" + "0" * 32 + "-b7ad6b7169203331-01", "00-zz" + "0" * 30 + "-b7ad6b7169203331-01"):
        assert tc.parse_traceparent(bad) is None
    assert tc.from_proto(pb.TraceContext()) is None


def test_a_continued_execution_inherits_the_trace_it_was_started_in() -> None:
    trace = emulator_pb.TraceContext(traceParent=PARENT, spanID="b7ad6b7169203331")
    first = events.execution_started(NOW, instance_id="i", execution_id="e1", name="o",
                                     version=None, input=None, trace=trace)  # fmt: skip
    nxt = events.execution_started(NOW, instance_id="i", execution_id="e2", name="o",
                                   version=None, input=None)  # fmt: skip
    events.inherit_trace(nxt, [events.orchestrator_started(NOW), first])
    assert nxt.executionStarted.parentTraceContext == trace


def test_a_database_from_before_trace_contexts_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE instances (hub TEXT NOT NULL, instance_id TEXT NOT NULL, execution_id TEXT NOT NULL, "
            "name TEXT NOT NULL, version TEXT, status INTEGER NOT NULL, input TEXT, output TEXT, custom_status TEXT, "
            "failure BLOB, tags TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, "
            "completed_at INTEGER, scheduled_start INTEGER, parent_instance_id TEXT, parent_execution_id TEXT, "
            "parent_task_id INTEGER, lock_token TEXT, lock_expires INTEGER, PRIMARY KEY (hub, instance_id))"
        )
    backend = SqliteBackend(str(path))
    try:
        with backend.transaction() as tx:
            assert tx.get_instance("h", "missing") is None
    finally:
        backend.close()
    with sqlite3.connect(path) as db:
        assert "trace_context" in {row[1] for row in db.execute("PRAGMA table_info(instances)")}
