"""An exclusive lock on ``<db>.lock``: one emulator process per database file, so no two hand out its leases."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from dtscale_emulator.errors import DatabaseInUseError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt


class DatabaseLock:
    """Holds the lock file's exclusive lock until :meth:`release` (or the process ends, even by ``kill -9``)."""

    def __init__(self, db_path: str) -> None:
        self.path = Path(f"{db_path}.lock")
        handle: IO[str] = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the server's lifetime
        try:
            _lock(handle)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise DatabaseInUseError(
                f"the database {db_path} is already served by another emulator (process {holder}, lock file "
                f"{self.path}); stop that emulator or give this one another --db"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle: IO[str] | None = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing drops the lock
            self._handle = None


def _lock(handle: IO[str]) -> None:
    if fcntl is not None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:  # pragma: no cover - Windows
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
