"""Time sources for the emulator: the system clock and a manually advanced clock for tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    """Where the emulator reads the current time from."""

    def now(self) -> datetime:
        """Returns the current UTC time (timezone-aware)."""
        ...

    def seconds_until(self, when: datetime) -> float | None:
        """Real seconds to wait until ``when``; ``None`` when only an explicit advance can get there.

        Args:
            when: A timezone-aware time, e.g. a timer's due time.
        """
        ...

    def subscribe(self, callback: Callable[[], None]) -> None:
        """Registers a callback invoked whenever time jumps (manual clocks only).

        Args:
            callback: Called with no arguments after a jump.
        """
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        """Returns the current UTC time (timezone-aware), read from the system clock."""
        return datetime.now(timezone.utc)

    def seconds_until(self, when: datetime) -> float | None:
        """Real seconds until ``when``: never negative, and never ``None`` since the wall clock gets there by itself.

        Args:
            when: A timezone-aware time.
        """
        return max(0.0, (when - self.now()).total_seconds())

    def subscribe(self, callback: Callable[[], None]) -> None:
        """Accepts ``callback`` and never calls it: the wall clock does not jump.

        Args:
            callback: Kept for the protocol's sake; never called.
        """
        # Real time never jumps, so there is nothing to announce.
        return None


class ManualClock:
    """A clock that only moves when told to; timers fire and waiters wake on :meth:`advance`."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2025, 1, 1, tzinfo=timezone.utc)
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def now(self) -> datetime:
        """Returns the clock's current UTC time: its start, moved by every :meth:`advance` so far."""
        with self._lock:
            return self._now

    def seconds_until(self, when: datetime) -> float | None:
        """Returns ``0.0`` when ``when`` has come, else ``None``: only :meth:`advance` moves this clock.

        Args:
            when: A timezone-aware time, e.g. a timer's due time.
        """
        return 0.0 if when <= self.now() else None

    def subscribe(self, callback: Callable[[], None]) -> None:
        """Registers ``callback`` to be called after every :meth:`advance` that announces the jump.

        Args:
            callback: Called with no arguments; the emulator uses it to fire due timers and wake waiting streams.
        """
        with self._lock:
            self._callbacks.append(callback)

    def advance(self, delta: timedelta | float, *, announce: bool = True) -> datetime:
        """Moves time forward by ``delta`` (a timedelta or seconds) and wakes everything waiting on time.

        Args:
            delta: How far to move: a ``timedelta`` or a number of seconds.
            announce: ``False`` leaves the waking to a later :meth:`announce` (a caller that moves time while
                holding a lock that what wakes up would need).

        Returns:
            The clock's new time.

        Raises:
            ValueError: ``delta`` is negative (a manual clock never moves backwards).
        """
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        if step < timedelta(0):
            raise ValueError("a manual clock cannot move backwards")
        with self._lock:
            self._now += step
            now = self._now
        if announce:
            self.announce()
        return now

    def set(self, when: datetime, *, announce: bool = True) -> datetime:
        """Moves time forward to ``when``.

        Args:
            when: The target time; a time already past leaves the clock where it is.
            announce: ``False`` leaves the waking to a later :meth:`announce`.

        Returns:
            The clock's new time.
        """
        return self.advance(max(timedelta(0), when - self.now()), announce=announce)

    def announce(self) -> None:
        """Wakes everything waiting on time."""
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()
