"""Generates a store of N finished 3-activity chains straight into SQLite, for bench/store_scale.py."""

from __future__ import annotations

import os
import random
import sqlite3
import time
import uuid
from typing import Any

from google.protobuf import timestamp_pb2, wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb

HUB = "default"
DAY = 86_400 * 1_000_000  # microseconds
SPAN_DAYS = 30
NAMES = ("Chain", "Order", "Sync", "Report", "Cleanup")
# Status mix of the generated store: mostly completed, some failed and terminated, a few still running.
MIX = ((1, 90), (3, 5), (5, 3), (0, 2))
BATCH = 50_000


def _ts(micros: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=micros // 1_000_000, nanos=(micros % 1_000_000) * 1000)


def _chain_events(iid: str, name: str, start: int, status: int) -> list[bytes]:
    """The history a 3-activity chain leaves: four turns, each opened by orchestratorStarted."""
    ev = []

    def add(event_id: int, at: int, **kind: Any) -> None:
        ev.append(pb.HistoryEvent(eventId=event_id, timestamp=_ts(at), **kind).SerializeToString())

    add(-1, start, orchestratorStarted=pb.OrchestratorStartedEvent())
    ev.append(_execution_started(iid, name, start))
    for task in range(3):
        at = start + (task + 1) * 2000
        add(
            task,
            at - 1000,
            taskScheduled=pb.TaskScheduledEvent(
                name=f"Step{task}", input=wrappers_pb2.StringValue(value=f'"step {task}"')
            ),
        )
        add(-1, at, orchestratorStarted=pb.OrchestratorStartedEvent())
        add(
            -1,
            at,
            taskCompleted=pb.TaskCompletedEvent(
                taskScheduledId=task, result=wrappers_pb2.StringValue(value=f'"done {task}"')
            ),
        )
    if status != 0:
        add(
            3,
            start + 8000,
            executionCompleted=pb.ExecutionCompletedEvent(
                orchestrationStatus=status, result=wrappers_pb2.StringValue(value='"shipped"')
            ),
        )
    return ev


def _execution_started(iid: str, name: str, start: int) -> bytes:
    instance = pb.OrchestrationInstance(instanceId=iid, executionId=wrappers_pb2.StringValue(value="e" + iid[:8]))
    started = pb.ExecutionStartedEvent(
        name=name, input=wrappers_pb2.StringValue(value='{"order": 12345, "items": 3}'), orchestrationInstance=instance
    )
    return pb.HistoryEvent(eventId=-1, timestamp=_ts(start), executionStarted=started).SerializeToString()


def generate(db: str, count: int, seed: int = 1) -> dict[str, Any]:
    """Writes ``count`` instances with their histories into a fresh store at ``db``; returns rate and size."""
    from dtscale_emulator.storage import SqliteBackend

    began = time.perf_counter()
    SqliteBackend(db).close()  # the current schema, indexes included
    rng = random.Random(seed)
    ids = [uuid.UUID(int=rng.getrandbits(128)).hex for _ in range(count)]
    statuses = rng.choices([s for s, _ in MIX], [w for _, w in MIX], k=count)
    now = int(time.time() * 1_000_000)
    # Rows go in in order of creation, as an emulator writes them: row IDs (and the pages rows share) follow
    # creation time while instance IDs are random, the layout a real store has and a purge by age meets.
    created_at = sorted(now - DAY - rng.randrange(SPAN_DAYS * DAY) for _ in range(count))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-2000000")
    conn.execute("INSERT OR IGNORE INTO task_hubs (name) VALUES (?)", (HUB,))
    # Secondary indexes are built once at the end (opening the store creates the missing ones): sorting once
    # is faster than keeping them in order row by row.
    indexes = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "AND tbl_name IN ('instances', 'history')"
        )
    ]
    for name in indexes:
        conn.execute(f"DROP INDEX {name}")
    # A store keyed by instance (ikey, in order of creation) or, made by an older tree, by hub and instance ID.
    keyed = "ikey" in {row[1] for row in conn.execute("PRAGMA table_info(history)")}
    for first in range(0, count, BATCH):
        conn.execute("BEGIN")
        conn.executemany(
            f"INSERT INTO instances ({COLUMNS}) VALUES ({','.join('?' * 21)})",
            (_instance_row(i, ids[i], statuses[i], created_at[i]) for i in range(first, min(first + BATCH, count))),
        )
        conn.execute("COMMIT")
    # Histories go in in key order (appends, not page splits): far faster. Keyed by ikey that is the order an
    # emulator writes them in; keyed by random ID, their pages end up fuller than an emulator's inserts leave them.
    templates: dict[tuple[str, int], list[bytes]] = {}
    in_key_order = list(range(count)) if keyed else sorted(range(count), key=ids.__getitem__)
    key_of = dict(conn.execute("SELECT instance_id, ikey FROM instances")) if keyed else {}
    for first in range(0, count, BATCH):
        history = []
        for i in in_key_order[first : first + BATCH]:
            iid, status, name, created = ids[i], statuses[i], NAMES[i % len(NAMES)], created_at[i]
            # The events carry the instance's own ID in executionStarted only; the rest is shared per (name, status).
            key = (name, status)
            if key not in templates:
                templates[key] = _chain_events("0" * 32, name, created, status)
            events = list(templates[key])
            events[1] = _execution_started(iid, name, created)
            if keyed:
                history.extend((key_of[iid], seq, e) for seq, e in enumerate(events))
            else:
                history.extend((HUB, iid, seq, e) for seq, e in enumerate(events))
        conn.execute("BEGIN")
        if keyed:
            conn.executemany("INSERT INTO history (ikey, seq, event) VALUES (?, ?, ?)", history)
        else:
            conn.executemany("INSERT INTO history (hub, instance_id, seq, event) VALUES (?, ?, ?, ?)", history)
        conn.execute("COMMIT")
    conn.close()
    SqliteBackend(db).close()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    seconds = time.perf_counter() - began
    size = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
    return {"seconds": seconds, "per_second": count / seconds, "bytes": size, "bytes_per_instance": size / count}


COLUMNS = (
    "hub, instance_id, execution_id, name, version, status, input, output, custom_status, failure, tags, "
    "created_at, updated_at, completed_at, scheduled_start, parent_instance_id, parent_execution_id, "
    "parent_task_id, lock_token, lock_expires, trace_context"
)


def _instance_row(i: int, iid: str, status: int, created: int) -> tuple[Any, ...]:
    done = None if status == 0 else created + 8000
    tags = '{"env": "prod"}' if i % 5 == 0 else "{}"
    output = None if status == 0 else '"shipped"'
    name, order = NAMES[i % len(NAMES)], '{"order": 12345, "items": 3}'
    return (HUB, iid, "e" + iid[:8], name, None, status, order, output, None, None, tags, created,
            done or created + 6000, done, None, None, None, None, None, None, None)  # fmt: skip


def table_sizes(db: str) -> dict[str, int]:
    """Bytes per table and index (SQLite's dbstat table, when compiled in)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except sqlite3.Error:
        rows = []
    conn.close()
    return {name: int(size) for name, size in rows}
