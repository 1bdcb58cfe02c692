"""The emulator, run as a process, with each sync of its write-ahead log recorded (for the power-loss tests).

Before each sync it reads how many frames the log holds (the ``mxFrame`` of the ``-shm`` index header); once the
sync has returned, those frames are on disk, and it appends that count to the file named by
``DTS_TEST_SYNC_RECORD``. A test that kills the process can then put the log back as a power loss would leave
it: the recorded frames kept, everything after them gone. With ``DTS_TEST_FAIL_SYNC=N`` the N-th sync after the
store opened fails (an I/O error) instead, unrecorded.
"""

from __future__ import annotations

import errno
import os
import struct
import sys

from dtscale_emulator import __main__ as cli
from dtscale_emulator.storage import group_commit


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


def main() -> int:
    record = os.environ["DTS_TEST_SYNC_RECORD"]
    fail_at = int(os.environ.get("DTS_TEST_FAIL_SYNC", "0"))
    db = sys.argv[sys.argv.index("--db") + 1]
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
