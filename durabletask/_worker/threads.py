"""The worker's thread pool: daemon threads, so work abandoned by ``stop()`` never keeps the process alive.

``concurrent.futures.ThreadPoolExecutor`` joins every one of its threads when the interpreter exits, even after
``shutdown(wait=False)``: one activity that never returns would then hold the process forever after the worker
stopped. These threads are daemons and nothing joins them at exit; a pool shut down without waiting simply lets
the process end around the work still running.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")

# A job: its future (None for one started with run(), whose outcome no one reads), function and arguments.
_Item = tuple[Future[Any] | None, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreadPool(Executor):
    """An executor of at most ``max_workers`` daemon threads, started as work arrives and kept until shutdown."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        # Threads done with a job and not yet handed another. A plain count under a lock of its own: a Semaphore
        # costs two Python-level Condition entries per job, and under the pool's lock a thread just started
        # (while submit() holds that lock) could not report itself idle in time for the next job.
        self._idle = 0
        self._idle_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shutdown = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._put((future, fn, args, kwargs))
        return future

    def run(self, fn: Callable[..., object], /, *args: Any) -> None:
        """Run ``fn(*args)`` on the pool with no future: for jobs that report their own outcome.

        What ``fn`` raises goes to :func:`threading.excepthook`; a job still queued when the pool is shut down
        with ``cancel_futures`` is dropped, as a submitted one is cancelled.
        """
        self._put((None, fn, args, {}))

    def _put(self, item: _Item) -> None:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new work after the pool was shut down")
            self._queue.put(item)
            # A thread waiting for work takes it; otherwise start one, up to the limit.
            with self._idle_lock:
                idle = self._idle > 0
                if idle:
                    self._idle -= 1
            if not idle and len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            threads = list(self._threads)
            if cancel_futures:
                self._cancel_queued()
            for _ in threads:
                self._queue.put(None)  # one stop mark per thread, behind the work already queued
        if wait:
            for thread in threads:
                thread.join()

    def _cancel_queued(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None and item[0] is not None:
                item[0].cancel()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            if future is None:
                try:
                    fn(*args)
                except BaseException:
                    threading.excepthook(threading.ExceptHookArgs((*sys.exc_info(), threading.current_thread())))
            elif future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as error:
                    future.set_exception(error)
                else:
                    future.set_result(result)
            del item, future, fn, args, kwargs  # nothing of a finished job is kept while this thread waits
            with self._idle_lock:
                self._idle += 1
