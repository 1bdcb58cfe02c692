"""Time skipping for tests: whenever no work item is out with a worker or waiting to be taken, the clock jumps to the
next due timer, so a workflow that sleeps for a month finishes in moments, and never while work runs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

from dtscale_emulator.engine import events
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.storage import Backend, NameFilter, Transaction

log = logging.getLogger("dtscale_emulator")

#: Seconds between looks when nothing announced a change: a safety net, as every change that can leave the emulator
#: idle (a completion, an abandon, a client's call) announces itself.
IDLE_POLL_SECONDS = 0.5
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EVERYTHING = NameFilter()


def _busy(tx: Transaction, hub: str, now: int) -> bool:
    """Whether work in ``hub`` is leased to a worker (a lease not yet expired) or can be taken right now."""
    return (
        tx.next_lease_expiry(hub, now) is not None
        or bool(tx.ready_instances(hub, now, _EVERYTHING, 1)[0])
        or bool(tx.ready_activities(hub, now, _EVERYTHING, 1))
        or bool(tx.ready_entities(hub, now, 1))
    )


def next_jump(tx: Transaction, hubs: Iterable[str], now: int) -> int | None:
    """When the clock may jump to (microseconds since the epoch): the earliest timer, scheduled start or delayed
    message of any hub, if no hub has work out or ready. ``None`` when it must not move."""
    due: int | None = None
    for hub in hubs:
        if _busy(tx, hub, now):
            return None
        upcoming = tx.next_message_time(hub, now)
        if upcoming is not None and (due is None or upcoming < due):
            due = upcoming
    return due


def skipping_clock(given: object | None) -> ManualClock:
    """The clock a time-skipping emulator runs on: ``given`` if it is a :class:`ManualClock`, else a new one at now.

    Raises:
        ValueError: ``given`` is a clock of another kind, which time skipping could not move.
    """
    if given is None:
        return ManualClock(datetime.now(timezone.utc))
    if not isinstance(given, ManualClock):
        raise ValueError(f"time skipping moves the clock itself: pass a ManualClock or no clock, not {given!r}")
    return given


def _moment(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)  # exact, where a float of seconds could round


class TimeSkipper:
    """Moves a :class:`ManualClock` to the next due timer whenever the emulator is idle.

    Idle: in no task hub is an orchestration turn, activity or entity batch leased or ready to be leased. The check
    and the jump happen inside one storage transaction, which every lease, completion and client change needs too,
    so nothing can start or become ready between them.

    It is told of changes as a :class:`~dtscale_emulator.engine.changes.ChangeSubscriber` and of ended leases by
    :meth:`lease_ended` (which also teach it the task hubs in use), and looks again after each.
    """

    def __init__(self, backend: Backend, clock: ManualClock, hubs: Iterable[str] = ()) -> None:
        self.backend = backend
        self.clock = clock
        self._hubs = set(hubs)
        self._lock = threading.Lock()
        self._look = threading.Event()
        self._stopping = threading.Event()
        self._paused = 0
        self._thread: threading.Thread | None = None
        #: How many times the clock jumped (for tests and logs).
        self.jumps = 0

    # Notifications ----------------------------------------------------------------------------------------------
    def _saw(self, hub: str | None) -> None:
        if hub is not None and hub not in self._hubs:
            with self._lock:
                self._hubs.add(hub)
        self._look.set()

    def work_changed(
        self, hub: str, kinds: tuple[str, ...] | None = None, names: Mapping[str, frozenset[str]] | None = None
    ) -> None:
        self._saw(hub)

    def instance_changed(self, hub: str | None, instance_id: str | None, status: int | None = None) -> None:
        self._saw(hub)

    def lease_ended(self, hub: str) -> None:
        """A work item was completed or handed back: the emulator may be idle now."""
        self._saw(hub)

    # Control ----------------------------------------------------------------------------------------------------
    @contextmanager
    def paused(self) -> Iterator[None]:
        """No jump while the block runs (e.g. while a test raises an event before a timeout may fire)."""
        with self._lock:
            self._paused += 1
        try:
            yield
        finally:
            with self._lock:
                self._paused -= 1
            self._look.set()

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopping.clear()
        self._look.set()  # a store opened with timers in it may be idle from the start
        self._thread = threading.Thread(target=self._run, name="dtscale-time-skipping", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping.set()
        self._look.set()
        thread.join()

    # The loop ---------------------------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopping.is_set():
            self._look.wait(IDLE_POLL_SECONDS)
            self._look.clear()  # before looking: a change while we look sets it again
            if self._stopping.is_set():
                return
            try:
                self.skip_if_idle()
            except Exception:  # the store closed under us, say: the next look tries again
                log.exception("time skipping: could not look for idleness")

    def skip_if_idle(self) -> datetime | None:
        """Jump to the next due time if the emulator is idle now; returns the new time, or ``None`` if it stayed."""
        with self._lock:
            if self._paused:
                return None
            hubs = sorted(self._hubs)
        with self.backend.transaction() as tx:
            now = self.clock.now()
            target = next_jump(tx, hubs, events.to_micros(now))
            if target is None:
                return None
            when = _moment(target)
            # Moved inside the transaction, announced after it: what the announcement wakes reads the store.
            self.clock.set(when, announce=False)
        self.jumps += 1
        log.debug("time skipping: idle, the clock jumps %s to %s", when - now, when.isoformat())
        self.clock.announce()
        return when
