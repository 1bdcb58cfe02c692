"""The emulator, run as a process, with each sync of its write-ahead log recorded (for the power-loss tests).

Before each sync it reads how many frames the log holds (the ``mxFrame`` of the ``-shm`` index header); once the
sync has returned, those frames are on disk, and it appends that count to the file named by
``DTS_TEST_SYNC_RECORD``. A test that kills the process can then put the log back as a power loss would leave
it: the recorded frames kept, everything after them gone. With ``DTS_TEST_FAIL_SYNC=N`` the N-th sync after the
store opened fails (an I/O error) instead, unrecorded.

``DTS_TEST_SYNC_PATH=kernel`` records the syncs the kernel runs for the event loop (``storage.kernel_sync``)
instead of the thread's: each count is read as the sync is submitted, and written once it has ended well.
"""

from __future__ import annotations

import errno
import os
import struct
import sys

from dtscale_emulator import __main__ as cli
from dtscale_emulator.storage import group_commit, kernel_sync


def frames_in_log(shm: str) -> int:
    """The log's valid frames by the index header, the lower of its two copies (SQLite writes them in turn)."""
    try:
        with open(shm, "rb") as f:
            header = f.read(96)
    except FileNotFoundError:
        return 0
    if len(header) < 96:
        return 0
    return min(struct.unpack_from("=I", header, 16)[0], struct.unpack_from("=I", header, 48 + 16)[0])


class RecordingKernelSync:
    """A :class:`kernel_sync.KernelSync` whose syncs are recorded; the ``fail_at``-th ends in an I/O error."""

    def __init__(self, inner: kernel_sync.KernelSync, shm: str, record: str, fail_at: int) -> None:
        self._inner, self._shm, self._record, self._fail_at = inner, shm, record, fail_at
        self._submitted = 0
        self._frames: list[int] = []
        self._failing = False

    def fileno(self) -> int:
        return self._inner.fileno()

    def submit(self) -> None:
        self._submitted += 1
        if self._submitted == self._fail_at:
            self._failing = True
            os.eventfd_write(self._inner.fileno(), 1)  # ends "now", without reaching the kernel
            return
        self._frames.append(frames_in_log(self._shm))
        self._inner.submit()

    def _ended(self, outcomes: list[int]) -> list[int]:
        if self._failing:
            self._failing = False
            return [-errno.EIO]
        for outcome in outcomes:
            frames = self._frames.pop(0)
            if outcome >= 0:
                with open(self._record, "a") as out:
                    out.write(f"{frames}\n")
        return outcomes

    def reap(self) -> list[int]:
        return self._ended(self._inner.reap())

    def wait(self, seconds: float | None = None) -> int | None:
        if self._failing:
            return self._ended([])[0]
        outcome = self._inner.wait(seconds)
        return None if outcome is None else self._ended([outcome])[0]

    def close(self) -> None:
        self._inner.close()


def main() -> int:
    record = os.environ["DTS_TEST_SYNC_RECORD"]
    fail_at = int(os.environ.get("DTS_TEST_FAIL_SYNC", "0"))
    db = sys.argv[sys.argv.index("--db") + 1]
    if os.environ.get("DTS_TEST_SYNC_PATH") == "kernel":
        real_open = kernel_sync.open_kernel_sync

        def recording_open(fd: int) -> RecordingKernelSync:
            inner = real_open(fd)
            if inner is None:
                raise SystemExit("kernel syncs are not available here")
            return RecordingKernelSync(inner, db + "-shm", record, fail_at)

        kernel_sync.open_kernel_sync = recording_open  # type: ignore[assignment]
        return cli.main(sys.argv[1:])
    real = group_commit.sync_file
    syncs = [0]

    def recording_sync(fd: int) -> None:
        frames = frames_in_log(db + "-shm")
        syncs[0] += 1
        if fail_at and syncs[0] == fail_at + 1:  # the first sync is the log's, as the store opens
            raise OSError(errno.EIO, "Input/output error (injected)")
        real(fd)
        with open(record, "a") as out:
            out.write(f"{frames}\n")

    group_commit.sync_file = recording_sync
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
