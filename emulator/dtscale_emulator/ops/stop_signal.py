"""Waiting in the main thread for SIGINT or SIGTERM without taking a lock in the signal handler.

A handler that calls ``threading.Event.set`` can deadlock the process: Python runs handlers in the main thread
between bytecodes, and if the signal lands while that same thread is inside ``Event.wait`` holding the event's
(non-reentrant) condition lock, ``set`` waits for that lock forever. The process then ignores SIGTERM, which is
how a supervisor stops it. Here the handler only writes a byte to a pipe, which takes no Python lock.
"""

from __future__ import annotations

import contextlib
import os
import signal
from types import FrameType, TracebackType

DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignal:
    """Installs handlers for ``signals`` on creation; :meth:`wait` returns the first one received.

    Create it before announcing readiness, so a supervisor reacting to the announcement can stop the process
    cleanly; use it as a context manager (or call :meth:`close`) to restore the previous handlers.
    """

    def __init__(self, signals: tuple[signal.Signals, ...] = DEFAULT_SIGNALS) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # a handler must never block, even if many signals pile up
        self._previous = {sig: signal.signal(sig, self._on_signal) for sig in signals}

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # A full pipe holds earlier signals already; one is enough to wake the waiter.
        with contextlib.suppress(BlockingIOError):
            os.write(self._write, bytes([signum]))

    def wait(self) -> signal.Signals:
        """Blocks until one of the signals arrives (a signal received before this call counts too)."""
        while True:
            try:
                data = os.read(self._read, 1)
            except InterruptedError:  # pragma: no cover - Python retries reads interrupted by handled signals
                continue
            if data:
                return signal.Signals(data[0])

    def close(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}
        os.close(self._read)
        os.close(self._write)

    def __enter__(self) -> StopSignal:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
