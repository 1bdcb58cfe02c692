"""SQLite tables and queries for durable entities: state, leases and pending lock requests."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from dtscale_emulator.protocol import pb
from dtscale_emulator.storage.base import EntityQueryArgs, EntityRecord, LockRequest, Message, Micros

ENTITY_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    hub TEXT NOT NULL, instance_id TEXT NOT NULL, state TEXT, modified_at INTEGER NOT NULL,
    locked_by TEXT, lock_owner TEXT, lock_token TEXT, lock_expires INTEGER,
    PRIMARY KEY (hub, instance_id)
);
CREATE INDEX IF NOT EXISTS ix_entities_lock ON entities (lock_token);
CREATE INDEX IF NOT EXISTS ix_entities_owner ON entities (hub, lock_owner);
CREATE INDEX IF NOT EXISTS ix_entities_lease ON entities (hub, lock_expires) WHERE lock_token IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_entities_modified ON entities (hub, modified_at);
CREATE TABLE IF NOT EXISTS lock_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT, hub TEXT NOT NULL, critical_section_id TEXT NOT NULL,
    owner TEXT NOT NULL, lock_set TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_lock_requests_hub ON lock_requests (hub, id);
"""
#: Up to this many entities changed since a query's ``modified_from``, the query reads them by modification time.
FEW_MODIFIED = 1000
_COLUMNS = "hub, instance_id, state, modified_at, locked_by, lock_owner, lock_token, lock_expires"
# An entity row with nothing in it: the entity does not exist, as in DTS, which removes such an entity itself.
_EMPTY = (
    "state IS NULL AND locked_by IS NULL AND lock_token IS NULL AND NOT EXISTS "
    "(SELECT 1 FROM messages m WHERE m.hub = entities.hub AND m.instance_id = entities.instance_id)"
)
#: An entity's queued operation runs while the entity is locked only if the lock's owner sent it; the
#: messages table keeps that sender (NULL for signals from clients and entities) so queries can tell without
#: parsing events.
_CALLER_COLUMN = "caller"


def add_caller_column(db: sqlite3.Connection) -> None:
    """Adds ``messages.caller`` to a store made before it existed, filling it in for queued calls.

    Runs inside the migration's transaction: a column added but left unfilled would make queued calls wait
    forever on their lock.
    """
    columns = {row[1] for row in db.execute("PRAGMA table_info(messages)")}
    if not columns or _CALLER_COLUMN in columns:
        return  # no queue yet (the latest schema makes it with the column), or already there
    db.execute(f"ALTER TABLE messages ADD COLUMN {_CALLER_COLUMN} TEXT")
    rows = db.execute("SELECT id, event FROM messages WHERE instance_id GLOB '@*'").fetchall()
    for message_id, raw in rows:
        event = pb.HistoryEvent.FromString(raw)
        if event.HasField("entityOperationCalled"):
            caller = event.entityOperationCalled.parentInstanceId.value
            db.execute("UPDATE messages SET caller = ? WHERE id = ?", (caller, message_id))


def glob_literal(text: str) -> str:
    """``text`` with GLOB wildcards escaped, for case-sensitive prefix matches that can use an index."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _entity(row: Sequence[Any]) -> EntityRecord:
    return EntityRecord(*row)


class EntityTables:
    """Entity primitives, mixed into the SQLite transaction."""

    _db: sqlite3.Connection

    def get_entity(self, hub: str, entity_id: str) -> EntityRecord | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM entities WHERE hub = ? AND instance_id = ?", (hub, entity_id)
        ).fetchone()
        return None if row is None else _entity(row)

    def put_entity(self, record: EntityRecord) -> None:
        values = (
            record.hub,
            record.instance_id,
            record.state,
            record.modified_at,
            record.locked_by,
            record.lock_owner,
            record.lock_token,
            record.lock_expires,
        )
        self._db.execute(f"INSERT OR REPLACE INTO entities ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values)

    def delete_entity(self, hub: str, entity_id: str) -> None:
        self._db.execute("DELETE FROM entities WHERE hub = ? AND instance_id = ?", (hub, entity_id))

    def drop_entity_if_empty(self, hub: str, entity_id: str) -> bool:
        """Deletes the entity when nothing is left of it: no state, no lock, no lease and no queued operation."""
        cur = self._db.execute(f"DELETE FROM entities WHERE hub = ? AND instance_id = ? AND {_EMPTY}", (hub, entity_id))
        return cur.rowcount > 0

    def lock_entity(self, hub: str, entity_id: str, token: str | None, expires: Micros | None) -> None:
        self._db.execute(
            "UPDATE entities SET lock_token = ?, lock_expires = ? WHERE hub = ? AND instance_id = ?",
            (token, expires, hub, entity_id),
        )

    def add_entity_operation(
        self, hub: str, entity_id: str, event: bytes, visible_at: Micros, caller: str | None
    ) -> int:
        cur = self._db.execute(
            "INSERT INTO messages (hub, instance_id, event, visible_at, caller) VALUES (?, ?, ?, ?, ?)",
            (hub, entity_id, event, visible_at, caller),
        )
        return int(cur.lastrowid or 0)

    def entity_operations(
        self, hub: str, entity_id: str, now: Micros, limit: int, caller: str | None = None
    ) -> list[Message]:
        """The oldest ``limit`` visible operations queued for an entity (only those ``caller`` called, if given).

        Reads no further than the batch, however long the queue.
        """
        caller_clause = "" if caller is None else "AND caller = ? "
        rows = self._db.execute(
            "SELECT id, event, visible_at FROM messages INDEXED BY ix_messages_instance "
            f"WHERE hub = ? AND instance_id = ? AND visible_at <= ? {caller_clause}ORDER BY id LIMIT ?",
            (hub, entity_id, now, *(() if caller is None else (caller,)), limit),
        ).fetchall()
        return [Message(r[0], bytes(r[1]), r[2]) for r in rows]

    def ready_entities(
        self, hub: str, now: Micros, limit: int, names: Sequence[str] | None = None
    ) -> list[EntityRecord]:
        """Unleased entities with visible operations they may run now; ``names`` (lower case) restricts the names.

        A locked entity counts only for operations its lock's owner called: the others wait for the
        unlock, and must not fill the page while other entities have work.
        """
        name_clause = ""
        if names is not None:
            patterns = [f"@{glob_literal(n)}@*" for n in names]
            name_clause = "AND (" + (" OR ".join("LOWER(e.instance_id) GLOB ?" for _ in patterns) or "0") + ")"
        else:
            patterns = []
        rows = self._db.execute(
            f"SELECT {', '.join('e.' + c.strip() for c in _COLUMNS.split(','))} "
            "FROM messages m JOIN entities e ON e.hub = m.hub AND e.instance_id = m.instance_id "
            "WHERE m.hub = ? AND m.visible_at <= ? AND (e.lock_token IS NULL OR e.lock_expires <= ?) "
            "AND (e.locked_by IS NULL OR m.caller = e.lock_owner) "
            f"{name_clause} ORDER BY m.visible_at, m.id LIMIT ?",
            (hub, now, now, *patterns, limit * 4),
        ).fetchall()
        seen: dict[str, EntityRecord] = {}
        for row in rows:
            seen.setdefault(row[1], _entity(row))
        return list(seen.values())[:limit]

    def backlog(self, hub: str, entity_id: str) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) FROM messages WHERE hub = ? AND instance_id = ?", (hub, entity_id)
        ).fetchone()
        return int(row[0])

    def query_entities(self, hub: str, args: EntityQueryArgs) -> list[EntityRecord]:
        clauses: list[str] = ["hub = ?"]
        params: list[object] = [hub]
        for clause, value in (
            ("modified_at >= ?", args.modified_from),
            ("modified_at < ?", args.modified_to),
            ("instance_id > ?", args.after_id),
        ):
            if value is not None:
                clauses.append(clause)
                params.append(value)
        if args.id_prefix:
            clauses.append("instance_id GLOB ?")
            params.append(glob_literal(args.id_prefix) + "*")
        if not args.include_transient:
            clauses.append("state IS NOT NULL")
        index = " INDEXED BY ix_entities_modified" if self._few_modified_since(hub, args.modified_from) else ""
        sql = f"SELECT {_COLUMNS} FROM entities{index} WHERE {' AND '.join(clauses)} ORDER BY instance_id LIMIT ?"
        return [_entity(r) for r in self._db.execute(sql, (*params, args.limit)).fetchall()]

    def _few_modified_since(self, hub: str, since: Micros | None) -> bool:
        """Whether at most :data:`FEW_MODIFIED` entities changed since ``since``: such a query (a worker asking
        what changed in the last seconds) reads them by time and sorts them, instead of walking every entity of
        the ID range in order. Counting stops at the bound, so asking costs little either way."""
        if since is None:
            return False
        counted = self._db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM entities INDEXED BY ix_entities_modified "
            "WHERE hub = ? AND modified_at >= ? LIMIT ?)",
            (hub, since, FEW_MODIFIED + 1),
        ).fetchone()[0]
        return int(counted) <= FEW_MODIFIED

    def add_lock_request(self, hub: str, critical_section_id: str, owner: str, lock_set: Sequence[str]) -> None:
        self._db.execute(
            "INSERT INTO lock_requests (hub, critical_section_id, owner, lock_set) VALUES (?, ?, ?, ?)",
            (hub, critical_section_id, owner, json.dumps(list(lock_set))),
        )

    def lock_requests(self, hub: str) -> list[LockRequest]:
        rows = self._db.execute(
            "SELECT id, critical_section_id, owner, lock_set FROM lock_requests WHERE hub = ? ORDER BY id", (hub,)
        ).fetchall()
        return [LockRequest(r[0], r[1], r[2], json.loads(r[3])) for r in rows]

    def delete_lock_request(self, request_id: int) -> None:
        self._db.execute("DELETE FROM lock_requests WHERE id = ?", (request_id,))

    def release_locks_of(self, hub: str, owner: str) -> int:
        """Frees every entity locked by ``owner`` and drops its waiting lock requests."""
        freed = [
            r[0]
            for r in self._db.execute(
                "SELECT instance_id FROM entities INDEXED BY ix_entities_owner WHERE hub = ? AND lock_owner = ?",
                (hub, owner),
            ).fetchall()
        ]
        self._db.execute(
            "UPDATE entities SET locked_by = NULL, lock_owner = NULL WHERE hub = ? AND lock_owner = ?", (hub, owner)
        )
        self._db.execute("DELETE FROM lock_requests WHERE hub = ? AND owner = ?", (hub, owner))
        for entity_id in freed:
            self.drop_entity_if_empty(hub, entity_id)
        return len(freed)
