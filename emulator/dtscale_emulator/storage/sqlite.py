"""SQLite implementation of the storage seam (one connection, serialized by a lock, WAL on disk)."""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from dtscale_emulator.errors import StorageError
from dtscale_emulator.storage.base import (
    ActivityRecord,
    EntityRecord,
    InstanceQueryArgs,
    InstanceRecord,
    Message,
    Micros,
    NameFilter,
)
from dtscale_emulator.storage.group_commit import GroupCommit
from dtscale_emulator.storage.lockfile import DatabaseLock
from dtscale_emulator.storage.sqlite_checks import check_store_file, open_store, sync_folder
from dtscale_emulator.storage.sqlite_entities import EntityTables
from dtscale_emulator.storage.sqlite_listing import (
    TERMINAL,
    AgeKey,
    accepted_clause,
    keys_by_age,
    placeholders,
    query_instance_ids,
)

_INSTANCE_COLUMNS = (
    "hub, instance_id, execution_id, name, version, status, input, output, custom_status, failure, tags, "
    "created_at, updated_at, completed_at, scheduled_start, parent_instance_id, parent_execution_id, "
    "parent_task_id, lock_token, lock_expires, trace_context"
)
_UPSERT_INSTANCE = (
    f"INSERT INTO instances ({_INSTANCE_COLUMNS}) VALUES ({','.join('?' * 21)}) "
    "ON CONFLICT (hub, instance_id) DO UPDATE SET "
    + ", ".join(f"{c.strip()} = excluded.{c.strip()}" for c in _INSTANCE_COLUMNS.split(",")[2:])
)
_ACTIVITY_COLUMNS = "id, hub, instance_id, task_id, name, version, request, lock_token, lock_expires"
#: The fields of EntityRecord, in order.
_ENTITY_COLUMNS = "hub, instance_id, state, modified_at, locked_by, lock_owner, lock_token, lock_expires"
_PER_INSTANCE_TABLES = ("messages", "activities")
# History goes first: its rows are found through their instance's row (by ikey).
_HUB_TABLES = ("history", "instances", *_PER_INSTANCE_TABLES, "entities", "lock_requests")
#: The instance's integer key (sqlite_schema), from its hub and ID.
_IKEY = "(SELECT ikey FROM instances WHERE hub = ? AND instance_id = ?)"
_HUB_IKEYS = "SELECT ikey FROM instances WHERE hub = ?"
#: IDs bound in one statement (SQLite allows 32,766 parameters; a purge batch is far smaller).
_ID_BATCH = 500


_INSTANCE_FIELDS = [c.strip() for c in _INSTANCE_COLUMNS.split(",")]
#: ``durability`` choices: what a commit has done to the disk before its call is answered (``full``: synced it).
SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}
log = logging.getLogger("dtscale_emulator")


@functools.cache
def _update_instance_sql(columns: tuple[int, ...]) -> str:
    assignments = ", ".join(f"{_INSTANCE_FIELDS[i]} = ?" for i in columns)
    return f"UPDATE instances SET {assignments} WHERE hub = ? AND instance_id = ?"


def _instance(row: Sequence[Any]) -> InstanceRecord:
    values = list(row)
    tags = values[10]
    values[10] = json.loads(tags) if tags and tags != "{}" else {}
    return InstanceRecord(**dict(zip(_INSTANCE_FIELDS, values, strict=True)))


def _activity(row: Sequence[Any]) -> ActivityRecord:
    return ActivityRecord(*row)


class SqliteTransaction(EntityTables):
    """Transaction-scoped primitives over one open SQLite connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._db = conn
        # Instance rows as read in the current transaction, by key: put_instance compares against them.
        self._read: dict[tuple[str, str], tuple[InstanceRecord, Sequence[Any]]] = {}
        #: Payload bytes this transaction wrote (what the group commit's bound on unsynced bytes counts).
        self.written = 0
        #: The instance rows it changed (None: rows it cannot name), which point reads wait for until synced.
        self.instances_written: set[tuple[str, str]] | None = set()

    def begin(self) -> None:
        """Forgets what the previous transaction read (its rows may have changed since)."""
        self._read.clear()
        self.written = 0
        self.instances_written = set()

    def _wrote(self, hub: str, instance_id: str) -> None:
        if self.instances_written is not None:
            self.instances_written.add((hub, instance_id))

    # Task hubs -------------------------------------------------------------------------------------
    def ensure_hub(self, hub: str) -> None:
        self._db.execute("INSERT OR IGNORE INTO task_hubs (name) VALUES (?)", (hub,))

    def hub_exists(self, hub: str) -> bool:
        return self._db.execute("SELECT 1 FROM task_hubs WHERE name = ?", (hub,)).fetchone() is not None

    def hub_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM task_hubs").fetchone()[0])

    def delete_hub(self, hub: str) -> None:
        self._read.clear()
        self.instances_written = None
        self._db.execute(f"DELETE FROM history WHERE ikey IN ({_HUB_IKEYS})", (hub,))
        for table in _HUB_TABLES[1:]:
            self._db.execute(f"DELETE FROM {table} WHERE hub = ?", (hub,))
        self._db.execute("DELETE FROM task_hubs WHERE name = ?", (hub,))

    def delete_hub_rows(self, hub: str, limit: int) -> int:
        """Deletes up to ``limit`` rows of the hub's data; returns how many went."""
        self._read.clear()
        self.instances_written = None
        removed = self._delete_hub_instances(hub, limit)
        for table in _HUB_TABLES[2:]:
            if removed >= limit:
                break
            sql = f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE hub = ? LIMIT ?)"
            removed += self._db.execute(sql, (hub, limit - removed)).rowcount
        return removed

    def _delete_hub_instances(self, hub: str, limit: int) -> int:
        # A few instances at a time, each one's history before its row: history rows are found through it.
        removed = 0
        while removed < limit:
            keys = [
                r[0]
                for r in self._db.execute(
                    "SELECT ikey FROM instances WHERE hub = ? LIMIT ?", (hub, max(1, (limit - removed) // 50))
                )
            ]
            if not keys:
                break
            marks = placeholders(keys)
            removed += self._db.execute(
                f"DELETE FROM history WHERE (ikey, seq) IN (SELECT ikey, seq FROM history WHERE ikey IN ({marks}) "
                "LIMIT ?)",
                (*keys, limit - removed),
            ).rowcount
            if removed >= limit:
                break  # some of these histories may be left: their instances stay for the next call
            keys = keys[: limit - removed]
            removed += self._db.execute(f"DELETE FROM instances WHERE ikey IN ({placeholders(keys)})", keys).rowcount
        return removed

    # Instances -------------------------------------------------------------------------------------
    def get_instance(self, hub: str, instance_id: str) -> InstanceRecord | None:
        row = self._db.execute(
            f"SELECT {_INSTANCE_COLUMNS} FROM instances WHERE hub = ? AND instance_id = ?", (hub, instance_id)
        ).fetchone()
        if row is None:
            return None
        record = _instance(row)
        self._read[(hub, instance_id)] = (record, row)
        return record

    def put_instance(self, record: InstanceRecord) -> None:
        values = (
            record.hub, record.instance_id, record.execution_id, record.name, record.version, record.status,
            record.input, record.output, record.custom_status, record.failure,
            json.dumps(record.tags) if record.tags else "{}",
            record.created_at, record.updated_at, record.completed_at, record.scheduled_start,
            record.parent_instance_id, record.parent_execution_id, record.parent_task_id,
            record.lock_token, record.lock_expires, record.trace_context,
        )  # fmt: skip
        key = (record.hub, record.instance_id)
        self._wrote(*key)
        self.written += len(record.input or "") + len(record.output or "") + len(record.custom_status or "")
        read = self._read.get(key)
        if read is not None and read[0] is record:
            # Read in this transaction and untouched since: write only the columns that changed, so
            # only the indexes over those columns are rewritten (and fewer pages go to the log).
            changed = tuple(i for i in range(2, len(values)) if values[i] != read[1][i])
            if not changed:
                return
            cursor = self._db.execute(_update_instance_sql(changed), [*(values[i] for i in changed), *key])
            if cursor.rowcount == 1:
                self._read[key] = (record, values)
                return
        self._db.execute(_UPSERT_INSTANCE, values)
        self._read[key] = (record, values)

    def delete_instance(self, hub: str, instance_id: str) -> None:
        self._read.pop((hub, instance_id), None)
        self._wrote(hub, instance_id)
        self.clear_history(hub, instance_id)
        for table in ("instances", *_PER_INSTANCE_TABLES):
            self._db.execute(f"DELETE FROM {table} WHERE hub = ? AND instance_id = ?", (hub, instance_id))

    def child_ids(self, hub: str, parent_id: str) -> list[str]:
        rows = self._db.execute(
            "SELECT instance_id FROM instances WHERE hub = ? AND parent_instance_id = ?", (hub, parent_id)
        ).fetchall()
        return [r[0] for r in rows]

    def delete_finished(self, hub: str, instance_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Deletes those of the instances that have finished, with everything stored for them.

        Returns the IDs deleted and the IDs of their children (sub-orchestrations). A few statements per batch
        of IDs, each walking its index in key order, instead of a read and four deletes per instance.
        """
        deleted: list[str] = []
        children: list[str] = []
        self.instances_written = None
        unique = sorted(set(instance_ids))
        for first in range(0, len(unique), _ID_BATCH):
            batch = unique[first : first + _ID_BATCH]
            marks = placeholders(batch)
            rows = self._db.execute(
                f"SELECT instance_id, ikey FROM instances WHERE hub = ? AND instance_id IN ({marks}) "
                f"AND status IN ({placeholders(TERMINAL)})",
                (hub, *batch, *TERMINAL),
            ).fetchall()
            if not rows:
                continue
            ids = [r[0] for r in rows]
            # Oldest first, these are neighbours: their histories share (and empty) a few pages.
            self._db.execute(f"DELETE FROM history WHERE ikey IN ({placeholders(rows)})", [r[1] for r in rows])
            marks = placeholders(ids)
            found = self._db.execute(
                f"SELECT instance_id FROM instances WHERE hub = ? AND parent_instance_id IN ({marks})", (hub, *ids)
            ).fetchall()
            children.extend(r[0] for r in found)
            for table in ("instances", *_PER_INSTANCE_TABLES):
                self._db.execute(f"DELETE FROM {table} WHERE hub = ? AND instance_id IN ({marks})", (hub, *ids))
            for iid in ids:
                self._read.pop((hub, iid), None)
            deleted.extend(ids)
        return deleted, children

    def instance_ids(self, hub: str, args: InstanceQueryArgs) -> list[str]:
        return query_instance_ids(self._db, hub, args)

    def instance_keys_by_age(self, hub: str, args: InstanceQueryArgs, after: AgeKey | None) -> list[AgeKey]:
        return keys_by_age(self._db, hub, args, after)

    def query_instances(self, hub: str, args: InstanceQueryArgs) -> list[InstanceRecord]:
        # The page's IDs come from covering indexes (sqlite_listing); only the page's own rows are read whole.
        ids = query_instance_ids(self._db, hub, args)
        if not ids:
            return []
        rows = self._db.execute(
            f"SELECT {_INSTANCE_COLUMNS} FROM instances WHERE hub = ? AND instance_id IN ({placeholders(ids)})",
            (hub, *ids),
        ).fetchall()
        rows.sort(key=lambda row: row[1])
        return [_instance(r) for r in rows]

    def lock_instance(self, hub: str, instance_id: str, token: str | None, expires: Micros | None) -> None:
        self._db.execute(
            "UPDATE instances SET lock_token = ?, lock_expires = ? WHERE hub = ? AND instance_id = ?",
            (token, expires, hub, instance_id),
        )
        self._read.pop((hub, instance_id), None)
        self._wrote(hub, instance_id)

    # History ---------------------------------------------------------------------------------------
    def history(self, hub: str, instance_id: str) -> list[bytes]:
        rows = self._db.execute(
            f"SELECT event FROM history WHERE ikey = {_IKEY} ORDER BY seq", (hub, instance_id)
        ).fetchall()
        return [bytes(r[0]) for r in rows]

    def history_length(self, hub: str, instance_id: str) -> int:
        # Sequence numbers run from 0 without gaps, so this is one index probe rather than a count.
        row = self._db.execute(
            f"SELECT COALESCE(MAX(seq), -1) FROM history WHERE ikey = {_IKEY}", (hub, instance_id)
        ).fetchone()
        return int(row[0]) + 1

    def append_history(self, hub: str, instance_id: str, events: Sequence[bytes], length: int | None = None) -> None:
        """Appends after the stored events; ``length``, when the caller knows it, saves looking it up.

        Callers pass only a length their lease kept current; one that is too small still cannot
        overwrite anything, as a taken sequence number violates the primary key and the transaction fails.
        """
        row = self._db.execute(_IKEY[1:-1], (hub, instance_id)).fetchone()
        if row is None:  # every caller writes to an instance it has read; a history cannot outlive its instance
            raise LookupError(f"no instance '{instance_id}' in task hub '{hub}' to append history to")
        start = self.history_length(hub, instance_id) if length is None else length
        self.written += sum(map(len, events))
        self._db.executemany(
            "INSERT INTO history (ikey, seq, event) VALUES (?, ?, ?)",
            [(row[0], start + i, e) for i, e in enumerate(events)],
        )

    def clear_history(self, hub: str, instance_id: str) -> None:
        self._db.execute(f"DELETE FROM history WHERE ikey = {_IKEY}", (hub, instance_id))

    # Messages --------------------------------------------------------------------------------------
    def add_message(self, hub: str, instance_id: str, event: bytes, visible_at: Micros) -> int:
        self.written += len(event)
        cur = self._db.execute(
            "INSERT INTO messages (hub, instance_id, event, visible_at) VALUES (?, ?, ?, ?)",
            (hub, instance_id, event, visible_at),
        )
        return int(cur.lastrowid or 0)

    def visible_messages(self, hub: str, instance_id: str, now: Micros) -> list[Message]:
        rows = self._db.execute(
            "SELECT id, event, visible_at FROM messages INDEXED BY ix_messages_instance "
            "WHERE hub = ? AND instance_id = ? AND visible_at <= ? ORDER BY id",
            (hub, instance_id, now),
        ).fetchall()
        return [Message(r[0], bytes(r[1]), r[2]) for r in rows]

    def has_visible_messages(self, hub: str, instance_id: str, now: Micros) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM messages INDEXED BY ix_messages_instance "
            "WHERE hub = ? AND instance_id = ? AND visible_at <= ? LIMIT 1",
            (hub, instance_id, now),
        ).fetchone()
        return row is not None

    def delete_messages(self, ids: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM messages WHERE id = ?", [(i,) for i in ids])

    def delete_instance_messages(self, hub: str, instance_id: str) -> None:
        self._db.execute("DELETE FROM messages WHERE hub = ? AND instance_id = ?", (hub, instance_id))

    def ready_instances(
        self, hub: str, now: Micros, accept: NameFilter, limit: int
    ) -> tuple[list[tuple[str, str, str | None]], bool]:
        accept_clause, accept_params = accepted_clause(accept, "i.name", "i.version")
        # Walk the visible-time index and stop early: the cost follows the page, not the backlog.
        rows = self._db.execute(
            "SELECT i.instance_id, i.name, i.version FROM messages m "
            "JOIN instances i ON i.hub = m.hub AND i.instance_id = m.instance_id "
            f"WHERE m.hub = ? AND m.visible_at <= ? AND (i.lock_token IS NULL OR i.lock_expires <= ?) "
            f"{accept_clause} ORDER BY m.visible_at, m.id LIMIT ?",
            (hub, now, now, *accept_params, limit * 4),
        ).fetchall()
        seen: dict[str, tuple[str, str, str | None]] = {}
        for row in rows:
            seen.setdefault(row[0], (row[0], row[1], row[2]))
        # Complete: every runnable instance is in the page (the scan ended before its limit, nothing cut).
        return list(seen.values())[:limit], len(rows) < limit * 4 and len(seen) <= limit

    def next_message_time(self, hub: str, after: Micros) -> Micros | None:
        row = self._db.execute(
            "SELECT MIN(visible_at) FROM messages WHERE hub = ? AND visible_at > ?", (hub, after)
        ).fetchone()
        return None if row[0] is None else int(row[0])

    # Activities ------------------------------------------------------------------------------------
    def add_activity(
        self, hub: str, instance_id: str, task_id: int, name: str, version: str | None, request: bytes
    ) -> int:
        self.written += len(request)
        cur = self._db.execute(
            "INSERT INTO activities (hub, instance_id, task_id, name, version, request) VALUES (?, ?, ?, ?, ?, ?)",
            (hub, instance_id, task_id, name, version, request),
        )
        return int(cur.lastrowid or 0)

    def get_activity(self, activity_id: int) -> ActivityRecord | None:
        row = self._db.execute(f"SELECT {_ACTIVITY_COLUMNS} FROM activities WHERE id = ?", (activity_id,)).fetchone()
        return None if row is None else _activity(row)

    def ready_activities(self, hub: str, now: Micros, accept: NameFilter, limit: int) -> list[ActivityRecord]:
        accept_clause, accept_params = accepted_clause(accept, "name", "version")
        rows = self._db.execute(
            f"SELECT {_ACTIVITY_COLUMNS} FROM activities WHERE hub = ? "
            f"AND (lock_token IS NULL OR lock_expires <= ?) {accept_clause} ORDER BY id LIMIT ?",
            (hub, now, *accept_params, limit),
        ).fetchall()
        return [_activity(r) for r in rows]

    def lock_activity(self, activity_id: int, token: str | None, expires: Micros | None) -> None:
        self._db.execute(
            "UPDATE activities SET lock_token = ?, lock_expires = ? WHERE id = ?",
            (token, expires, activity_id),
        )

    def delete_activity(self, activity_id: int) -> None:
        self._db.execute("DELETE FROM activities WHERE id = ?", (activity_id,))

    def delete_instance_activities(self, hub: str, instance_id: str, only_idle: bool = False) -> None:
        idle = " AND lock_token IS NULL" if only_idle else ""
        self._db.execute(f"DELETE FROM activities WHERE hub = ? AND instance_id = ?{idle}", (hub, instance_id))

    def next_lease_expiry(self, hub: str, after: Micros = -1) -> Micros | None:
        parts = " UNION ALL ".join(
            f"SELECT MIN(lock_expires) AS e FROM {table} WHERE hub = ? AND lock_token IS NOT NULL AND lock_expires > ?"
            for table in ("instances", "activities", "entities")
        )
        row = self._db.execute(f"SELECT MIN(e) FROM ({parts})", (hub, after) * 3).fetchone()
        return None if row[0] is None else int(row[0])


class SqliteBackend:
    """A SQLite store: a file path for persistence, or ``None`` for a private in-memory database.

    A file is checked before it is used (``sqlite_checks``: writable, a SQLite database, no other application's
    tables, a schema version this emulator knows, and, with ``integrity_check``, every page sound); one that fails
    raises :class:`~dtscale_emulator.errors.StoreUnusableError` and is left as it was. The file is locked for this
    process, whatever path names it; a second backend on it raises
    :class:`~dtscale_emulator.errors.DatabaseInUseError`. ``durability`` is ``"full"`` (the default: every commit
    is synced to disk before it returns, so what was acknowledged survives an OS crash or power loss) or
    ``"normal"`` (a commit survives a crash of the process, but an OS crash or power loss may lose the last
    commits before a checkpoint).
    """

    def __init__(self, path: str | None = None, durability: str = "full", integrity_check: bool = True) -> None:
        if durability not in SYNCHRONOUS:
            raise ValueError(f"durability must be one of {sorted(SYNCHRONOUS)}, not {durability!r}")
        self.path = path
        self._lock = threading.RLock()
        self._file_lock = DatabaseLock(path) if path else None
        try:
            if path:
                check_store_file(path, integrity=integrity_check)
                if self._file_lock is not None and self._file_lock.created:
                    sync_folder(path)
            self._conn = open_store(path, durability)
            try:
                self._group = GroupCommit(path) if path and durability == "full" else None
            except BaseException:
                self._conn.close()
                raise
        except BaseException:
            # A store that cannot be opened keeps no lock on its file.
            if self._file_lock is not None:
                self._file_lock.release()
            raise
        self._tx = SqliteTransaction(self._conn)
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoints_stopped = False

    @property
    def synchronous(self) -> str:
        """What a commit has done to the disk when its call is answered, in SQLite's ``synchronous`` terms.

        ``FULL`` under the group commit (the log synced after the commit, before the answer), else the
        connection's own setting (``NORMAL``: synced at checkpoints only).
        """
        if self._group is not None:
            return "FULL"
        with self._lock:
            level = int(self._conn.execute("PRAGMA synchronous").fetchone()[0])
        return ("OFF", "NORMAL", "FULL", "EXTRA")[level]

    def read_instance(self, hub: str, instance_id: str) -> InstanceRecord | None:
        """One instance's row, outside a write transaction; its answer waits only for unsynced changes to that row."""
        with self._lock:
            self._tx.begin()
            record = self._tx.get_instance(hub, instance_id)
        if self._group is not None:
            self._group.instance_read((hub, instance_id))
        return record

    @property
    def group_commit(self) -> GroupCommit | None:
        """The syncing of the log after commits (``durability="full"`` on a file), else ``None``."""
        return self._group

    @property
    def last_commit(self) -> int:
        """The number of the newest commit that wrote (0 when commits are not synced after the fact)."""
        return 0 if self._group is None else self._group.committed

    async def durable(self, made: int, seen: int = 0) -> None:
        """Returns once commit ``made`` and the commits up to ``seen`` are on disk (see GroupCommit.durable)."""
        if self._group is not None:
            await self._group.durable(made, seen)

    async def room(self) -> None:
        """Waits while the commits not yet on disk hold too many bytes (a stalled disk holds back writers)."""
        if self._group is not None:
            await self._group.room()

    @contextmanager
    def transaction(self) -> Iterator[SqliteTransaction]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._tx.begin()
            changes = self._conn.total_changes
            try:
                yield self._tx
            except BaseException:
                self._roll_back()  # never hides the error that got us here
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as error:
                # A COMMIT that fails (disk full, I/O error, busy) may leave the transaction open; close it so
                # the next call starts clean, and report the failure without the database's own words.
                self._roll_back()
                error_id = uuid.uuid4().hex[:12]
                log.error("error %s: commit failed: %s", error_id, error)
                raise StorageError(
                    f"the emulator could not save the change (error {error_id}; the server log has the details)"
                ) from error
            if self._group is not None:
                changes = self._conn.total_changes - changes
                self._group.committed_one(self._tx.written + 128 * changes, changes > 0, self._tx.instances_written)
                if self._group.failed and not self._checkpoints_stopped:
                    # A checkpoint would copy newer pages into the file, then start the log again; a power loss
                    # before that start reached the disk would replay the old log, cut short where the failed
                    # sync lost frames, over those pages. Left alone until a restart, the log replays consistently.
                    self._checkpoints_stopped = True
                    self._conn.execute("PRAGMA wal_autocheckpoint=0")

    def _roll_back(self) -> None:
        if not self._conn.in_transaction:
            return  # SQLite already rolled back (it does after some I/O errors)
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            log.exception("rollback failed; the database connection may be unusable")

    def release_all_leases(
        self, keep_until: Micros | None = None, now: Micros = 0
    ) -> list[ActivityRecord | EntityRecord]:
        with self.transaction():
            self._tx.instances_written = None
            # Only the leased rows (through ix_instances_lease): rewriting every row made a restart grow with the store.
            self._conn.execute(
                "UPDATE instances SET lock_token = NULL, lock_expires = NULL WHERE lock_token IS NOT NULL"
            )
            if keep_until is None:
                for table in ("activities", "entities"):
                    self._conn.execute(
                        f"UPDATE {table} SET lock_token = NULL, lock_expires = NULL WHERE lock_token IS NOT NULL"
                    )
                return []
            kept: list[ActivityRecord | EntityRecord] = []
            for table in ("activities", "entities"):
                self._conn.execute(
                    f"UPDATE {table} SET lock_token = NULL, lock_expires = NULL "
                    "WHERE lock_token IS NOT NULL AND (lock_expires IS NULL OR lock_expires <= ?)",
                    (now,),
                )
                self._conn.execute(
                    f"UPDATE {table} SET lock_expires = ? WHERE lock_token IS NOT NULL AND lock_expires > ?",
                    (keep_until, keep_until),
                )
            rows = self._conn.execute(
                f"SELECT {_ACTIVITY_COLUMNS} FROM activities WHERE lock_token IS NOT NULL ORDER BY id"
            ).fetchall()
            kept.extend(_activity(r) for r in rows)
            rows = self._conn.execute(f"SELECT {_ENTITY_COLUMNS} FROM entities WHERE lock_token IS NOT NULL").fetchall()
            kept.extend(EntityRecord(*r) for r in rows)
            return kept

    def reset(self) -> None:
        with self.transaction():
            self._tx.instances_written = None
            for table in _HUB_TABLES:
                self._conn.execute(f"DELETE FROM {table}")

    def checkpoint(self) -> None:
        """Copies committed pages from the write-ahead log into the database, outside the store lock.

        A bulk delete (a filter purge) fills the log quickly; left to the automatic checkpoint, the copy runs
        inside whichever commit crosses the threshold, often a short call's, and holds the store lock for
        the whole copy. Run between purge steps from a connection of its own, it overlaps other calls instead
        (a passive checkpoint never waits for readers or writers).
        """
        if not self.path or self._checkpoints_stopped:
            return
        if self._checkpointer is None:
            self._checkpointer = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        with self._lock:
            if self._group is not None:
                self._group.close()  # what was committed is synced first
            if self._checkpointer is not None:
                self._checkpointer.close()
            self._conn.close()
            if self._checkpoints_stopped and self.path:
                # Closing copied the log into the file and removed it: that removal must not come undone.
                with suppress(OSError):
                    sync_folder(self.path)
            if self._file_lock is not None:
                self._file_lock.release()
