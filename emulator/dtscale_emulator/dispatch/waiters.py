"""Waits on instances (WaitForInstanceStart/Completion): who waits for what, and waking them on changes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from dtscale_emulator.errors import UnavailableError
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.storage import InstanceRecord


class InstanceWaiters:
    """Waiters on one instance are woken by changes to that instance only, not by every change.

    Args:
        read: Reads an instance's current record (``None`` if it does not exist).
        closing: Whether the emulator is stopping (waits then end with UNAVAILABLE).
    """

    def __init__(self, read: Callable[[str, str], InstanceRecord | None], closing: Callable[[], bool]) -> None:
        self._read = read
        self._closing = closing
        self._watchers: dict[tuple[str, str], dict[aio_loop.Flag, Callable[[int], bool]]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many instances are being waited on."""
        with self._lock:
            return len(self._watchers)

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        """Wakes the waiters on one instance (or, with ``None``, on every instance of a hub or of all).

        With ``status`` (the one just committed), only waiters that this status can satisfy wake: a wait
        for completion sleeps through the instance starting to run.
        """
        with self._lock:
            if hub is not None and instance_id is not None:
                found = self._watchers.get((hub, instance_id), {})
                events = [e for e, done in found.items() if status is None or done(status)]
            else:
                events = [e for (h, _), found in self._watchers.items() if hub in (None, h) for e in found]
        for event in events:
            aio_loop.call_soon(event.set)

    async def wait(
        self,
        hub: str,
        instance_id: str,
        done: Callable[[int], bool],
        timeout: float | None,
        is_active: Callable[[], bool],
    ) -> InstanceRecord | None:
        """Waits until ``done(status)`` holds for the instance's status; returns None if it does not exist.

        Raises:
            TimeoutError: if ``timeout`` seconds pass first.
            UnavailableError: if the emulator stops first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        changed = aio_loop.Flag()
        key = (hub, instance_id)
        with self._lock:
            self._watchers.setdefault(key, {})[changed] = done
        try:
            while True:
                changed.clear()
                record = self._read(hub, instance_id)
                if record is None or done(record.status):
                    return record
                if self._closing():
                    raise UnavailableError(
                        f"the emulator is stopping; the wait for orchestration instance '{instance_id}' can be retried"
                    )
                remaining = None if deadline is None else deadline - time.monotonic()
                if (remaining is not None and remaining <= 0) or not is_active():
                    raise TimeoutError(f"timed out waiting for orchestration instance '{instance_id}'")
                # Bounded so a vanished caller is noticed even without a change to the instance.
                await aio_loop.wait(changed, min(remaining, 5.0) if remaining is not None else 5.0)
        finally:
            with self._lock:
                found = self._watchers.get(key)
                if found is not None:
                    found.pop(changed, None)
                    if not found:
                        del self._watchers[key]
