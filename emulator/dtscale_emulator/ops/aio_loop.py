"""The event loop every emulator server in a process is served from, on one background thread.

All RPC handlers run on this thread, so engine and storage work never competes with other request threads
for the interpreter. Other threads (a test advancing a manual clock, a fault schedule, a caller stopping the
server) reach the loop only through :func:`run` and :func:`call_soon`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def shared_loop() -> asyncio.AbstractEventLoop:
    """The running loop, started on first use (a daemon thread: it never keeps a process alive)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            _thread = threading.Thread(target=serve, name="dts-emulator-loop", daemon=True)
            _thread.start()
            ready.wait()
            _loop = loop
        return _loop


def on_loop_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Runs ``coro`` on the loop and returns its result (from any thread but the loop's own)."""
    if on_loop_thread():
        coro.close()
        raise RuntimeError("the emulator's loop cannot wait for itself; call this from another thread")
    return asyncio.run_coroutine_threadsafe(coro, shared_loop()).result(timeout)


def call_soon(fn: Callable[[], object]) -> None:
    """Calls ``fn`` on the loop: now if already there, else as soon as the loop is free."""
    if on_loop_thread():
        fn()
    else:
        shared_loop().call_soon_threadsafe(fn)


class Signal:
    """A broadcast "something changed": every coroutine waiting on it wakes; :meth:`set` works from any thread.

    Take :meth:`current` *before* looking at the state it guards, then wait on it: a change made in between
    has already set it, so no wake-up is lost.
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def current(self) -> asyncio.Event:
        return self._event

    def set(self) -> None:
        call_soon(self._fire)

    def _fire(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()


class Flag:
    """An event for the loop's own waits: like ``asyncio.Event``, but a timed wait costs one future and one timer.

    ``asyncio.wait_for`` or ``asyncio.wait`` on an ``Event`` makes a task, a second future and callbacks for
    each wait; a stream that goes idle between work items waits several times per orchestration. Used only on
    the loop's thread (set it through :func:`call_soon` from elsewhere).
    """

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[bool]] = []

    def is_set(self) -> bool:
        return self._set

    def clear(self) -> None:
        self._set = False

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(True)

    async def wait(self, timeout: float | None) -> bool:
        """Waits at most ``timeout`` seconds; whether it was set. A cancellation is never swallowed."""
        if self._set:
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(future)
        timer = None if timeout is None else loop.call_later(timeout, _time_out, future)
        try:
            return await future
        finally:
            if timer is not None:
                timer.cancel()
            # Timed out or cancelled (its future is done then too): not left for a set() that may never come.
            if self._waiters and not self._set:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(future)


def _time_out(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)


async def wait(event: asyncio.Event | Flag, timeout: float | None) -> bool:
    """Waits for ``event`` at most ``timeout`` seconds; whether it was set."""
    if event.is_set():
        return True
    if isinstance(event, Flag):
        return await event.wait(timeout)
    # asyncio.wait, not wait_for: a cancellation that arrives as the event is set is never swallowed.
    waiter = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait((waiter,), timeout=timeout)
    finally:
        waiter.cancel()
    return bool(done)
