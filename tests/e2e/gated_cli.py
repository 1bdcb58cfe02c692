"""The ``durabletask`` command line with its progress held: ``python gated_cli.py ARGS...``.

After each ``exported ...`` progress line it writes, the process waits for a line (or the end) on its stdin. A
test that signals the export after its first line then knows where the export stands when the signal lands;
otherwise a loaded machine can run the whole export between the line and the signal.
"""

from __future__ import annotations

import signal
import sys
from typing import IO, Any

from durabletask._cli.launch import main


class _HeldAfterProgress:
    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        if text.startswith("exported "):
            self._stream.flush()
            sys.stdin.readline()  # the test says when the export may go on (Ctrl-C lands here, in the main thread)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


if __name__ == "__main__":
    # Ctrl-C as at a terminal: a suite started in the background of a shell without job control (`cmd &` in a
    # script) runs with SIGINT ignored, Python then keeps it ignored, and so would this process, its child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stderr = _HeldAfterProgress(sys.stderr)  # type: ignore[assignment]  # the export writes its lines there
    sys.exit(main(sys.argv[1:]))
