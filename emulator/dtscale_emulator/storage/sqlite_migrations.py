"""The SQLite store's schema version (``PRAGMA user_version``) and the ordered migrations between versions.

A new store is made at the latest version in one step. An older one is brought forward one migration at a
time, each in its own transaction together with the version it reaches, so a crash leaves the store at the
last version it completed and the next open goes on from there. Stores written before the version existed
read as version 0; every migration from 0 checks what is already there, because such stores were written by
several releases. A store newer than this emulator is refused rather than guessed at.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from dtscale_emulator.errors import StorageError
from dtscale_emulator.storage.sqlite_entities import ENTITY_SCHEMA, add_caller_column
from dtscale_emulator.storage.sqlite_listing import LISTING_SCHEMA
from dtscale_emulator.storage.sqlite_schema import SCHEMA, key_history_by_instance

log = logging.getLogger("dtscale_emulator")


@dataclass(frozen=True)
class Migration:
    """One step: run on a store at ``version - 1`` inside a transaction, leaving it at ``version``."""

    version: int
    summary: str
    apply: Callable[[sqlite3.Connection], None]


def _drop_full_indexes(db: sqlite3.Connection) -> None:
    # Indexes over every row, replaced by partial ones (children, lease) and wider listing ones.
    for name in ("ix_instances_parent", "ix_instances_lock", "ix_instances_created", "ix_instances_completed"):
        db.execute(f"DROP INDEX IF EXISTS {name}")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "key histories by the instance's integer key", key_history_by_instance),
    Migration(2, "record the caller of each queued entity call", add_caller_column),
    Migration(3, "partial parent and lease indexes, wider listing indexes", _drop_full_indexes),
)
LATEST = MIGRATIONS[-1].version


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def _is_empty(db: sqlite3.Connection) -> bool:
    return int(db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]) == 0


def _in_transaction(db: sqlite3.Connection, step: Callable[[sqlite3.Connection], None], version: int) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        step(db)
        db.execute(f"PRAGMA user_version = {int(version)}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _create_latest(db: sqlite3.Connection) -> None:
    for statement in _statements(SCHEMA + ENTITY_SCHEMA + LISTING_SCHEMA):
        db.execute(statement)


#: Columns a migration adds to a table that stores of an older version have without them.
ADDED_BY_MIGRATIONS = frozenset({"ikey", "trace_context", "caller"})


@functools.cache
def emulator_tables() -> dict[str, frozenset[str]]:
    """The tables the latest schema makes (SQLite's own included), each with its columns: what a store may hold."""
    db = sqlite3.connect(":memory:")
    try:
        _create_latest(db)
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: frozenset(row[1] for row in db.execute(f"PRAGMA table_info({name})")) for name in names}
    finally:
        db.close()


def _statements(script: str) -> list[str]:
    # executescript would commit the surrounding transaction; the scripts hold no ';' inside a statement.
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def migrate(db: sqlite3.Connection) -> None:
    """Brings the store on ``db`` (autocommit mode) to :data:`LATEST`, or raises for a newer one."""
    version = schema_version(db)
    if version > LATEST:
        raise StorageError(
            f"the store is at schema version {version}, but this emulator knows versions up to {LATEST}: "
            "open it with the dtscale-emulator release that wrote it, or a newer one"
        )
    if version == 0 and _is_empty(db):
        _in_transaction(db, _create_latest, LATEST)
        return
    for migration in MIGRATIONS[version:]:
        log.info("upgrading the store to schema version %d: %s", migration.version, migration.summary)
        _in_transaction(db, migration.apply, migration.version)
    # New tables and indexes of the latest schema that a migrated store does not have yet.
    _in_transaction(db, _create_latest, LATEST)
