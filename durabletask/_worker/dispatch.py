"""Concurrency for work items: a bounded slot pool per kind, a thread pool, and an event loop for async code."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable, Collection, Coroutine, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from enum import Enum
from functools import partial
from typing import Any, TypeVar

from durabletask._worker.threads import DaemonThreadPool

T = TypeVar("T")


class WorkKind(Enum):
    """The kinds of work item, each with its own concurrency limit."""

    ORCHESTRATION = "orchestration"
    ACTIVITY = "activity"
    ENTITY = "entity"


def startable_limits(
    limits: Mapping[WorkKind, int], *, threads: int, async_kinds: Collection[WorkKind] = ()
) -> dict[WorkKind, int]:
    """Per kind, how many work items can start as soon as they arrive: what a stream may lease.

    Synchronous code of each kind runs on that kind's pool of ``threads`` threads, so a kind's limit
    is capped there: a work item leased beyond it would wait in a queue while its lease runs out,
    and the backend would hand it out again (it would run twice). Kinds in ``async_kinds`` run on
    the event loop and keep their configured limit.
    """
    return {kind: limit if kind in async_kinds else min(limit, threads) for kind, limit in limits.items()}


class Slots:
    """A bounded semaphore whose waiters can be woken for shutdown instead of waiting for a release.

    ``on_full`` is called (holding the slots' lock) by each :meth:`acquire` that finds every slot taken
    and so has to wait.
    """

    def __init__(self, limit: int, on_full: Callable[[], None] | None = None) -> None:
        if limit < 1:
            raise ValueError(f"a concurrency limit must be at least 1, got {limit}")
        self.limit = limit
        self._used = 0
        # Taken directly on the paths every work item passes (entering the Condition is a Python call);
        # the Condition over it is for waiting, and is notified only when someone waits.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0
        self._on_full = on_full

    @property
    def used(self) -> int:
        with self._lock:
            return self._used

    def acquire(self, abandon: threading.Event) -> bool:
        """Take a slot, waiting while all are in use; ``False`` if ``abandon`` was set first."""
        with self._lock:
            if self._used >= self.limit and not abandon.is_set() and self._on_full is not None:
                self._on_full()
            while self._used >= self.limit and not abandon.is_set():
                self._waiting += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1
            if abandon.is_set():
                return False
            self._used += 1
            return True

    def release(self) -> None:
        with self._lock:
            if self._used == 0:
                raise RuntimeError("a work-item slot was released more often than it was taken")
            self._used -= 1
            if self._waiting:
                self._cond.notify()

    def wake(self) -> None:
        """Wake every waiter so it can re-check its abandon event."""
        with self._lock:
            self._cond.notify_all()


class WorkItemPools:
    """Runs work items with per-kind limits; reading the stream waits for a free slot (backpressure).

    Synchronous jobs run on a thread pool per kind (at most ``max_threads`` threads, started as
    needed), so a slot taken means a thread is free and long activities never hold up orchestrations.
    ``async`` jobs run on one event loop in its own thread, so an async activity does not hold a pool
    thread while it awaits. Every thread is a daemon: work still running when the pools close without
    waiting (:meth:`running` names it) does not keep the process from exiting.
    """

    def __init__(self, limits: Mapping[WorkKind, int], *, max_threads: int, logger: logging.Logger) -> None:
        self._logger = logger
        self._slots = {kind: Slots(limits[kind], on_full=partial(self._reading_waits, kind)) for kind in WorkKind}
        self._max_threads = max_threads
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # taken directly per work item; _idle over it is for wait_idle()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._running: dict[int, str] = {}  # what each job still running does, by submission number
        self._numbers = itertools.count()
        self._pools: dict[WorkKind, DaemonThreadPool] = {}
        self._blocking: DaemonThreadPool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None

    def slots(self, kind: WorkKind) -> Slots:
        return self._slots[kind]

    def _reading_waits(self, kind: WorkKind) -> None:
        # Backpressure is otherwise invisible: the stream simply stops being read.
        self._logger.debug(
            "all %d %s slots are in use; reading work items waits for one", self._slots[kind].limit, kind.value
        )

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def running(self) -> list[str]:
        """What each job still running does (the ``what`` it was submitted with), oldest first."""
        with self._lock:
            return list(self._running.values())

    def start(self) -> None:
        self._stopping.clear()
        self._pools = {
            kind: DaemonThreadPool(min(slots.limit, self._max_threads), f"durabletask-{kind.value}")
            for kind, slots in self._slots.items()
        }

    def acquire(self, kind: WorkKind) -> bool:
        """Reserve a slot for one work item of ``kind``; ``False`` once the pools are stopping."""
        return self._slots[kind].acquire(self._stopping)

    def submit(self, kind: WorkKind, job: Callable[[], None], *, what: str | None = None) -> None:
        """Run ``job`` on the thread pool in a slot already taken with :meth:`acquire`.

        ``what`` names the work (instance, activity, task) in the log should ``stop()`` abandon it.
        """
        pool = self._require_pool(kind)
        number = self._begin(what or f"a work item ({kind.value})")
        try:
            pool.run(self._guarded, kind, number, job)
        except BaseException:
            self._end(kind, number)
            raise

    def submit_async(
        self, kind: WorkKind, job: Callable[[], Coroutine[Any, Any, None]], *, what: str | None = None
    ) -> None:
        """Run the coroutine made by ``job`` on the event loop in a slot taken with :meth:`acquire`."""
        loop = self._ensure_loop()
        number = self._begin(what or f"a work item ({kind.value})")
        try:
            asyncio.run_coroutine_threadsafe(self._guarded_async(kind, number, job), loop)
        except BaseException:
            self._end(kind, number)
            raise

    async def run_blocking(self, fn: Callable[[], T]) -> T:
        """From an async job, run a blocking call (such as sending a completion) off the event loop.

        It runs on a pool of its own, not on a kind's pool, where it could wait behind long
        synchronous activities.
        """
        if self._blocking is None:
            raise RuntimeError("the work-item pools are not running")
        return await asyncio.get_running_loop().run_in_executor(self._blocking, fn)

    def stop_accepting(self) -> None:
        """Make waiting and future :meth:`acquire` calls return ``False``; running work continues."""
        self._stopping.set()
        for slots in self._slots.values():
            slots.wake()

    def wait_idle(self, timeout: float | None) -> bool:
        """Wait until no work item is running; ``False`` if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._in_flight:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def close(self, *, wait: bool) -> None:
        """Release the threads; with ``wait=False`` running work is left to finish in the background."""
        self.stop_accepting()
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            if wait and self._loop_thread is not None:
                self._loop_thread.join()
        pools: list[DaemonThreadPool] = list(self._pools.values())
        self._pools = {}
        blocking, self._blocking = self._blocking, None
        for pool in [*pools, *([blocking] if blocking is not None else [])]:
            pool.shutdown(wait=wait, cancel_futures=not wait)

    def _require_pool(self, kind: WorkKind) -> DaemonThreadPool:
        pool = self._pools.get(kind)
        if pool is None:
            raise RuntimeError("the work-item pools are not running")
        return pool

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            # For the activities' own asyncio.to_thread calls; the worker's blocking sends use self._blocking.
            loop.set_default_executor(
                ThreadPoolExecutor(max_workers=self._max_threads, thread_name_prefix="durabletask-async-to-thread")
            )
            self._blocking = DaemonThreadPool(self._max_threads, "durabletask-async-blocking")
            ready: Future[None] = Future()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set_result, None)
                try:
                    loop.run_forever()
                finally:
                    loop.close()

            self._loop_thread = threading.Thread(target=run, name="durabletask-async-work", daemon=True)
            self._loop_thread.start()
            ready.result()
            self._loop = loop
        return self._loop

    def _begin(self, what: str) -> int:
        with self._lock:
            number = next(self._numbers)
            self._running[number] = what
            self._in_flight += 1
            return number

    def _end(self, kind: WorkKind, number: int) -> None:
        self._slots[kind].release()
        with self._lock:
            self._running.pop(number, None)
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.notify_all()

    def _guarded(self, kind: WorkKind, number: int, job: Callable[[], None]) -> None:
        try:
            job()
        except BaseException:  # a pool thread has no one above it to report to
            self._logger.exception("a %s work item failed unexpectedly", kind.value)
        finally:
            self._end(kind, number)

    async def _guarded_async(self, kind: WorkKind, number: int, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        try:
            await job()
        except asyncio.CancelledError:
            raise
        except BaseException:  # SystemExit or KeyboardInterrupt out of a task stops the whole loop
            self._logger.exception("a %s work item failed unexpectedly", kind.value)
        finally:
            self._end(kind, number)
