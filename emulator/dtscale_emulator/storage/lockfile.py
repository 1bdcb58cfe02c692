"""An exclusive lock on the database file itself: one emulator process per store, whatever path names it.

The lock used to be taken on ``<path>.lock``, a file named after the path given; a symlink or a hard link to the
same store named another lock file, so two emulators served one store and each released the other's leases. On
POSIX the lock is now ``flock`` on the database file, which belongs to the file (its device and inode), not to
a name. SQLite's own locks are ``fcntl`` byte-range locks, which are independent of ``flock`` on Linux and the
BSDs, so the two do not meet. Windows keeps a lock file beside the file a symlink resolves to (its byte-range
locks are mandatory, so the database file itself cannot carry one without blocking SQLite's reads).
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


class DatabaseLock:
    """Holds the store's exclusive lock until :meth:`release` (or the process ends, even by ``kill -9``).

    On POSIX it creates the file when it does not exist (an empty file is a new store to SQLite); :attr:`created`
    says whether the file was missing.
    """

    def __init__(self, db_path: str) -> None:
        self.path = db_path
        self.created = not os.path.lexists(db_path)
        # Windows: a lock file beside the file a symlink resolves to (see the module's docstring).
        lock_path = db_path if fcntl is not None else f"{os.path.realpath(db_path)}.lock"
        self._fd: int = _open(lock_path, db_path)
        try:
            _lock(self._fd)
        except OSError:
            holder = _holder(self._fd)
            os.close(self._fd)
            raise DatabaseInUseError(
                f"the database {db_path} is already served by another emulator (process {holder or 'unknown'}); "
                "stop that emulator or give this one another --db"
            ) from None
        self._held = True

    def release(self) -> None:
        if self._held:
            os.close(self._fd)  # closing drops the lock
            self._held = False


def _open(lock_path: str, db_path: str) -> int:
    # flock needs only read access, which lets a read-only store be reported as such rather than as "permission
    # denied"; Windows' byte-range locks want a handle that may write.
    access = os.O_RDONLY if fcntl is not None else os.O_RDWR
    try:
        return os.open(lock_path, access | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except FileNotFoundError:
        raise StoreUnusableError(
            f"cannot use {db_path} as the store: the folder {os.path.dirname(os.path.abspath(db_path))} does not "
            "exist (create it, or give --db a path in an existing folder)"
        ) from None
    except IsADirectoryError:
        raise StoreUnusableError(f"cannot use {db_path} as the store: it is a folder; give --db a file in it") from None
    except OSError as error:
        raise StoreUnusableError(f"cannot use {db_path} as the store: {error.strerror or error}") from None


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:  # pragma: no cover - Windows
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)


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
