"""The checks a file passes before it is used as the store, all made without writing a byte to it.

Opening a file as the store switches it to WAL and writes its schema version and tables, so everything that
could make it the wrong file is looked at first, through a read-only connection: that it is writable (as is its
folder, where SQLite keeps the write-ahead log), that it is a SQLite database, that it holds no table the
emulator does not make (another application's file, whose tables would be mixed with ours), that its schema
version is one this emulator knows, and that SQLite's ``quick_check`` finds every page sound. A damaged page
otherwise goes unnoticed until a call reads it, and then every such call fails.

``quick_check`` reads every page of the file, so its cost grows with the store (``bench/integrity_check.py``);
``--skip-integrity-check`` leaves it out. Each refusal is one :class:`StoreUnusableError` line that names the
file, the cause and what to do.
"""

from __future__ import annotations

import logging
import os
import shlex
import sqlite3
import stat
from pathlib import Path

from dtscale_emulator.errors import StoreUnusableError
from dtscale_emulator.storage.sqlite_migrations import (
    ADDED_BY_MIGRATIONS,
    LATEST,
    emulator_tables,
    migrate,
    schema_version,
)

#: What every SQLite database file starts with (the first 16 bytes of its 100-byte header).
_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100
_READ_BLOCK = 1 << 20
log = logging.getLogger("dtscale_emulator")


def unusable(path: str, cause: str) -> StoreUnusableError:
    """The one-line refusal of ``path``: ``cause`` says what is wrong with it and what to do."""
    return StoreUnusableError(f"cannot use {path} as the store: {cause}")


def check_store_file(path: str, *, integrity: bool = True) -> None:
    """Raises :class:`StoreUnusableError` if the file at ``path`` cannot serve as the store; changes nothing.

    An empty file is a new store. ``integrity`` runs SQLite's ``quick_check`` over every page.
    """
    _check_writable(path)
    links = os.stat(path).st_nlink
    if links > 1:
        # SQLite names the write-ahead log after the path it was given: opened by another name after a crash, the
        # store would miss the log's last commits, and the stale log could later be replayed over newer pages.
        log.warning(
            "the store %s has %d hard links; always open it by the same name (a crash's write-ahead log is "
            "found only under the name the store was open by)",
            path,
            links,
        )
    size = os.path.getsize(path)
    if size == 0:
        return
    with open(path, "rb") as f:
        header = f.read(_HEADER_SIZE)
    if len(header) < _HEADER_SIZE or not header.startswith(_MAGIC):
        raise unusable(
            path,
            f"it is not a SQLite database ({size} bytes that do not start with SQLite's header); give --db a new "
            "file, or a store an emulator wrote",
        )
    # Read-only: such a connection neither recovers nor checkpoints a write-ahead log into the file on close.
    try:
        db = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise unusable(path, f"SQLite cannot open it ({error})") from None
    try:
        _check_tables(path, db)
        _check_version(path, db)
        if integrity:
            _check_integrity(path, db)
    except sqlite3.DatabaseError as error:
        raise unusable(path, f"it is damaged (SQLite cannot read it: {error}); {recovery_advice(path)}") from None
    finally:
        db.close()


def recovery_advice(path: str) -> str:
    """What to do with a store SQLite finds damaged: a backup, or the rows still readable copied into a new file.

    SQLite's shell dumps every row it can read and ends a dump that met damage with a ROLLBACK, which the ``sed``
    turns into a COMMIT. (``.recover`` would find more, but needs a SQLite built with the ``dbpage`` table, which
    many Linux distributions' shells lack.) The new store's schema version reads as 0, and the emulator brings it
    forward on open.
    """
    source, target = shlex.quote(path), shlex.quote(f"{path}.recovered")
    return (
        f"restore it from a backup, or copy the rows still readable into a new store with: sqlite3 {source} .dump "
        f'| sed "s/^ROLLBACK; -- due to errors$/COMMIT;/" | sqlite3 {target} (then start with --db {target})'
    )


def _check_writable(path: str) -> None:
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise unusable(path, "it is not a regular file")
    # No write bit for anyone means read-only even to root, whom os.access would let through.
    if not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise unusable(path, "the file is read-only and the emulator writes every change to it; make it writable")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise unusable(
            path, f"its folder {folder} is not writable, and SQLite keeps the store's write-ahead log beside it"
        )


def _check_tables(path: str, db: sqlite3.Connection) -> None:
    ours = emulator_tables()
    rows = db.execute("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name").fetchall()
    # The emulator makes no views: one, whatever its name, is another application's.
    foreign = [name for kind, name in rows if kind == "view" or (name not in ours and not name.startswith("sqlite_"))]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise unusable(
            path,
            f"it holds tables that are not the emulator's ({shown}), so it belongs to another application; "
            "give --db a file of the emulator's own",
        )
    # A table with one of our names must have the columns every release gave it (only migrations add others).
    for kind, name in rows:
        if kind == "table" and not name.startswith("sqlite_"):
            has = {row[1] for row in db.execute(f"PRAGMA table_info({name})")}
            lacks = sorted(ours[name] - ADDED_BY_MIGRATIONS - has)
            if lacks:
                raise unusable(
                    path,
                    f"its table {name} lacks the emulator's columns ({', '.join(lacks)}), so it is not an emulator "
                    "store; give --db a file of the emulator's own",
                )


def _check_version(path: str, db: sqlite3.Connection) -> None:
    version = schema_version(db)
    if version > LATEST:
        raise unusable(
            path,
            f"the store is at schema version {version}, but this emulator knows versions up to {LATEST}; open it "
            "with the dtscale-emulator release that wrote it, or a newer one",
        )


def _read_through(path: str) -> None:
    """Reads the file once from start to end, so the OS has it cached before ``quick_check`` walks it.

    ``quick_check`` visits pages in the order of the trees, which on a file not in the page cache is a random read
    per page: 1.4-2.0 s at 100,000 instances against 0.2-0.5 s with this pass first, 16 s against 4.9 s at a
    million (``bench/integrity_check.py``).
    A memory-mapped check is as fast, but a disk read error there kills the process (SIGBUS) instead of being
    reported; here it is an ``OSError``.
    """
    with open(path, "rb", buffering=0) as f:
        while f.read(_READ_BLOCK):
            pass


def _check_integrity(path: str, db: sqlite3.Connection) -> None:
    try:
        _read_through(path)
    except OSError as error:
        raise unusable(path, f"reading it failed ({error.strerror or error}); {recovery_advice(path)}") from None
    # quick_check(1) stops at the first problem: a badly damaged file is refused as fast as a slightly damaged one.
    found = [row[0] for row in db.execute("PRAGMA quick_check(1)")]
    if found != ["ok"]:
        # Each problem may span lines ("*** in database main ***" first): one line for the message.
        lines = [line.strip() for text in found for line in str(text).splitlines()]
        problem = "; ".join(line for line in lines if line and not line.startswith("***"))
        raise unusable(path, f"it is damaged (SQLite's quick_check: {problem}); {recovery_advice(path)}")


def sync_folder(path: str) -> None:
    """Makes the new file's entry in its folder durable, so a power loss cannot leave acknowledged work nameless."""
    if os.name != "posix":  # pragma: no cover - Windows cannot open a folder to sync it
        return
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_store(path: str | None, durability: str) -> sqlite3.Connection:
    """The store's connection, set up and at the latest schema; a file failing here is named in the error."""
    # A larger statement cache keeps every query of the hot paths prepared.
    conn = sqlite3.connect(path or ":memory:", check_same_thread=False, isolation_level=None, cached_statements=512)
    try:
        if path:
            # In WAL mode NORMAL syncs the log only at checkpoints: a commit then survives a process kill, not a
            # power loss. With ``full`` the group commit (group_commit.py) syncs the log after the commits, and
            # their calls are answered only then; FULL here would sync it inside every COMMIT, one at a time.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # macOS's fsync leaves the data in the drive's cache and F_FULLFSYNC flushes it; elsewhere a no-op.
            conn.execute(f"PRAGMA fullfsync={'ON' if durability == 'full' else 'OFF'}")
            # Checkpoints copy the log back in bigger, rarer steps.
            conn.execute("PRAGMA wal_autocheckpoint=4000")
        conn.execute("PRAGMA temp_store=MEMORY")
        # Hot pages only (in-flight instances and queues): a file database leaves the rest to the OS page cache,
        # which keeps the emulator's own memory flat over long runs. In memory the cache is the store itself.
        conn.execute("PRAGMA cache_size=-8192" if path else "PRAGMA cache_size=-65536")
        migrate(conn)
    except sqlite3.Error as error:
        conn.close()
        if not path:
            raise
        raise unusable(path, f"SQLite could not prepare it ({error})") from None
    except BaseException:
        conn.close()
        raise
    return conn
