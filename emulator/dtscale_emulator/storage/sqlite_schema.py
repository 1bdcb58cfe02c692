"""The SQLite store's tables, and the one-time change that keys histories by an instance's integer key.

An instance has two keys: its ID (a caller's string, usually a random UUID) and ``ikey``, an integer given in
order of creation. Lookups by ID go through the unique index on ``(hub, instance_id)``. The history, the largest
table by far, is keyed by ``(ikey, seq)``: a new instance's events go at the end of the table, on pages the
in-flight instances share and that stay in the cache, and a purge of the oldest instances empties whole pages.
Keyed by the random ID instead, each instance's events sat on a page of their own somewhere in a large store,
and a purged instance left about 3.8 pages in the write-ahead log at a million stored, 2.4 when keyed by ``ikey``
(the rest is its entries in the ID and status indexes, which are ordered by ID whatever the layout). The key
also makes a history row about 40 bytes shorter: 690 bytes instead of 1,190 for a 12-event history. Which of
these layouts a store has is told by its schema version (``sqlite_migrations``).
"""

from __future__ import annotations

import logging
import sqlite3
import time

log = logging.getLogger("dtscale_emulator")

#: ``ikey`` is AUTOINCREMENT so that a key is never given twice, even after the newest instance is deleted: a
#: history row can only ever belong to the instance it was written for.
_INSTANCES_TABLE = """
CREATE TABLE IF NOT EXISTS {name} (
    ikey INTEGER PRIMARY KEY AUTOINCREMENT,
    hub TEXT NOT NULL, instance_id TEXT NOT NULL, execution_id TEXT NOT NULL, name TEXT NOT NULL,
    version TEXT, status INTEGER NOT NULL, input TEXT, output TEXT, custom_status TEXT, failure BLOB,
    tags TEXT NOT NULL DEFAULT '{{}}', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    completed_at INTEGER, scheduled_start INTEGER, parent_instance_id TEXT, parent_execution_id TEXT,
    parent_task_id INTEGER, lock_token TEXT, lock_expires INTEGER, trace_context BLOB,
    UNIQUE (hub, instance_id)
);
"""
_HISTORY_TABLE = """
CREATE TABLE IF NOT EXISTS {name} (
    ikey INTEGER NOT NULL, seq INTEGER NOT NULL, event BLOB NOT NULL, PRIMARY KEY (ikey, seq)
) WITHOUT ROWID;
"""
#: The instance columns both layouts have (all but ``ikey``).
_COLUMNS = (
    "hub, instance_id, execution_id, name, version, status, input, output, custom_status, failure, tags, "
    "created_at, updated_at, completed_at, scheduled_start, parent_instance_id, parent_execution_id, "
    "parent_task_id, lock_token, lock_expires, trace_context"
)

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS task_hubs (name TEXT PRIMARY KEY);\n"
    "-- lock_token/lock_expires hold the lease of the work item currently out for an instance (or, in\n"
    "-- activities and entities, for that row); the token is the work item's completionToken.\n"
    + _INSTANCES_TABLE.format(name="instances")
    + """
-- Only the rows that have a parent, or a lease, are indexed for them: most finished instances have neither, and
-- every index entry is one more page written when an instance is created, leased or purged.
CREATE INDEX IF NOT EXISTS ix_instances_children ON instances (hub, parent_instance_id)
    WHERE parent_instance_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_instances_lease ON instances (hub, lock_expires) WHERE lock_token IS NOT NULL;
"""
    + _HISTORY_TABLE.format(name="history")
    + """
-- Pending events per instance (or entity). A durable timer is a timerFired message whose visible_at is
-- its fire time; a scheduled start is an executionStarted message visible at the start time. ``caller`` is
-- the instance that called a queued entity operation (NULL for signals and for other messages).
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, hub TEXT NOT NULL, instance_id TEXT NOT NULL,
    event BLOB NOT NULL, visible_at INTEGER NOT NULL, caller TEXT
);
CREATE INDEX IF NOT EXISTS ix_messages_visible ON messages (hub, visible_at, id);
CREATE INDEX IF NOT EXISTS ix_messages_instance ON messages (hub, instance_id, id);
CREATE TABLE IF NOT EXISTS activities (
    id INTEGER PRIMARY KEY AUTOINCREMENT, hub TEXT NOT NULL, instance_id TEXT NOT NULL,
    task_id INTEGER NOT NULL, name TEXT NOT NULL, version TEXT, request BLOB NOT NULL,
    lock_token TEXT, lock_expires INTEGER
);
CREATE INDEX IF NOT EXISTS ix_activities_fifo ON activities (hub, id);
CREATE INDEX IF NOT EXISTS ix_activities_lease ON activities (hub, lock_expires) WHERE lock_token IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_activities_instance ON activities (hub, instance_id);
"""
)


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def key_history_by_instance(db: sqlite3.Connection) -> None:
    """Rewrites a store made before instances had ``ikey`` (its history keyed by hub and instance ID).

    Runs inside the migration's transaction (a crash leaves the old layout, to be upgraded on the next open):
    instances keep their row order, which is the order they were created in, as their ``ikey``; histories are
    copied in ``ikey`` order, so they are appended, not inserted at random. 1.9 minutes at a million
    instances; the indexes over instances are rebuilt afterwards by the schema script.
    """
    columns = _columns(db, "instances")
    if not columns or "ikey" in columns:
        return  # a new store, or already upgraded
    began = time.monotonic()
    log.warning("upgrading the store: keying histories by instance (once; a minute or two per million instances)")
    if "trace_context" not in columns:  # older still: before instances kept their trace
        db.execute("ALTER TABLE instances ADD COLUMN trace_context BLOB")
    db.execute(_INSTANCES_TABLE.format(name="instances_keyed"))
    db.execute(f"INSERT INTO instances_keyed (ikey, {_COLUMNS}) SELECT rowid, {_COLUMNS} FROM instances ORDER BY rowid")
    db.execute(_HISTORY_TABLE.format(name="history_keyed"))
    if _columns(db, "history"):
        # Walks instances in ikey order and each one's history by its old primary key: appends only.
        db.execute(
            "INSERT INTO history_keyed (ikey, seq, event) SELECT i.ikey, h.seq, h.event "
            "FROM instances_keyed i CROSS JOIN history h ON h.hub = i.hub AND h.instance_id = i.instance_id "
            "ORDER BY i.ikey, h.seq"
        )
        db.execute("DROP TABLE history")
    db.execute("DROP TABLE instances")  # and its indexes: the latest schema makes them on the new table
    db.execute("ALTER TABLE history_keyed RENAME TO history")
    db.execute("ALTER TABLE instances_keyed RENAME TO instances")
    log.warning("store upgraded in %.1f s", time.monotonic() - began)
