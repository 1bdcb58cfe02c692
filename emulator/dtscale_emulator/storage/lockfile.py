"""An exclusive lock on the database file itself: one emulator process per store, whatever path names it.

The lock used to be taken on ``<path>.lock``, a file named after the path given; a symlink or a hard link to the
same store named another lock file, so two emulators served one store and each released the other's leases.
The lock is now ``flock`` on the database file, which belongs to the file (its device and inode), not to a name.

SQLite's own locks are ``fcntl`` byte-range locks. On Linux's local file systems the two kinds never meet, but on
the BSDs and macOS, and on Linux over NFS or SMB, ``flock`` is kept with the ``fcntl`` locks, and an exclusive
``flock`` would then refuse SQLite's own locks in this very process. So after taking it, one ``fcntl`` lock is
tried on a byte SQLite never locks; where that is refused, the ``flock`` is dropped and the lock falls back to a
``<path>.lock`` file beside the file a symlink resolves to (symlinks are still covered there, hard links in other
folders are not). Windows always takes the fallback, with its own byte-range lock on that file.
"""

from __future__ import annotations

import os
from pathlib import Path

from dtscale_emulator.errors import DatabaseInUseError, StoreUnusableError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

_PROC_LOCKS = "/proc/locks"
#: A byte SQLite never locks: past the 512 it locks from 1 GiB on, inside the page it leaves unused there.
_PROBE_OFFSET = 0x40000000 + 512 + 64


class DatabaseLock:
    """Holds the store's exclusive lock until :meth:`release` (or the process ends, even by ``kill -9``).

    It creates the file when it does not exist (an empty file is a new store to SQLite); :attr:`created` says
    whether the file was missing. :attr:`fallback` is the ``.lock`` file used where the database file itself
    cannot carry the lock, else ``None``.
    """

    def __init__(self, db_path: str) -> None:
        self.path = db_path
        self.created = not os.path.lexists(db_path)
        self.fallback: str | None = None
        fd = _open(db_path, db_path)
        if fcntl is not None and _lock_file_itself(fd, db_path):
            self._fd = fd
        else:
            os.close(fd)
            self.fallback = f"{os.path.realpath(db_path)}.lock"
            self._fd = _lock_fallback(self.fallback, db_path)
        self._held = True

    def release(self) -> None:
        if self._held:
            os.close(self._fd)  # closing drops the lock
            self._held = False


def _in_use(db_path: str, holder: int | None) -> DatabaseInUseError:
    return DatabaseInUseError(
        f"the database {db_path} is already served by another emulator (process {holder or 'unknown'}); "
        "stop that emulator or give this one another --db"
    )


def _open(path: str, db_path: str, access: int = os.O_RDONLY) -> int:
    # Read access is enough for flock, and lets a read-only store be reported as such rather than as "permission
    # denied" (the checks that follow say so).
    try:
        return os.open(path, access | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except FileNotFoundError:
        raise StoreUnusableError(
            f"cannot use {db_path} as the store: the folder {os.path.dirname(os.path.abspath(db_path))} does not "
            "exist (create it, or give --db a path in an existing folder)"
        ) from None
    except IsADirectoryError:
        raise StoreUnusableError(f"cannot use {db_path} as the store: it is a folder; give --db a file in it") from None
    except OSError as error:
        raise StoreUnusableError(f"cannot use {db_path} as the store: {path}: {error.strerror or error}") from None


def _lock_file_itself(fd: int, db_path: str) -> bool:
    """Takes ``flock`` on the database file; ``False`` where it cannot serve (see the module's docstring)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise _in_use(db_path, holder) from None
    except OSError:
        return False  # a file system without flock
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, _PROBE_OFFSET)
    except OSError:
        fcntl.flock(fd, fcntl.LOCK_UN)  # it holds fcntl locks too: SQLite's would be refused
        return False
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, _PROBE_OFFSET)
    return True


def _lock_fallback(lock_path: str, db_path: str) -> int:
    """Locks ``lock_path`` and writes this process's ID in it, for the refusal of a second emulator to name."""
    fd = _open(lock_path, db_path, os.O_RDWR)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:  # pragma: no cover - Windows
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        holder = _holder(fd) or _written_holder(fd)
        os.close(fd)
        raise _in_use(db_path, holder) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _written_holder(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _holder(fd: int) -> int | None:
    """The process holding the file's ``flock``, read from Linux's ``/proc/locks``; ``None`` elsewhere."""
    try:
        stat = os.fstat(fd)
        lines = Path(_PROC_LOCKS).read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:1835 0 EOF" (major:minor in hex, then the inode); a waiter's line has
    # "->" after the number and one field more.
    key = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4].isdigit():
            return int(fields[4])
    return None
