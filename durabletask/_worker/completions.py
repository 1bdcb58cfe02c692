"""Sending work-item results back: bounded retries on transport errors, lost leases logged and dropped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import grpc

from durabletask._worker.failures import describe, is_lease_lost, status_code

# Transient transport errors worth another try; anything else will not improve by retrying. In
# particular RESOURCE_EXHAUSTED: a result over a size limit is refused the same way every time.
_RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE})


class CompletionSender:
    """Delivers one completion or abandonment, never raising.

    A rejection because the work item's lease is gone (another worker owns it, or it expired) is
    expected after reconnects and long pauses: the backend redelivers the work, so the result is
    dropped with a warning. Each call blocks only its own thread, so completions go out concurrently.
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        stopping: threading.Event | None = None,
        attempts: int = 3,
        retry_delay: float = 0.5,
        timeout: float | None = 30.0,
    ) -> None:
        self._logger = logger
        self._stopping = stopping or threading.Event()
        self._attempts = max(1, attempts)
        self._retry_delay = retry_delay
        self.timeout = timeout
        # Sends in flight: the channel must not be closed under them (grpc can crash the process when an RPC
        # starts on a closed intercepted channel), so closing waits for them and later sends are dropped.
        self._gate = threading.Condition()
        self._in_flight = 0
        self._closed = False

    def close(self, timeout: float) -> bool:
        """Refuse new sends and wait up to ``timeout`` seconds for those in flight; ``True`` if none remain."""
        with self._gate:
            self._closed = True
            return self._gate.wait_for(lambda: self._in_flight == 0, timeout)

    def send(self, what: str, call: Callable[[], object]) -> bool:
        """Run ``call`` (one unary RPC); ``True`` if the backend accepted it."""
        with self._gate:
            if self._closed:
                self._logger.warning("could not deliver %s: the worker has stopped", what)
                return False
            self._in_flight += 1
        try:
            return self._send(what, call)
        finally:
            with self._gate:
                self._in_flight -= 1
                self._gate.notify_all()

    def _send(self, what: str, call: Callable[[], object]) -> bool:
        for attempt in range(1, self._attempts + 1):
            try:
                call()
                return True
            except Exception as error:
                delay = self._retry_delay_after(what, error, attempt)
                # A stopping worker gets no second chance: its channel is about to close.
                if delay is None or self._stopping.wait(delay):
                    return False
        return False

    def send_async(self, what: str, start: Callable[[], grpc.Future[Any]], finished: Callable[[], None]) -> None:
        """Start one unary RPC (``start`` returns its future) without waiting for it, retrying as :meth:`send`.

        ``finished`` is called exactly once, when the completion is delivered or given up: on the thread gRPC
        completes the call on, on a retry's own thread, or on this one when the call cannot start.
        """
        with self._gate:
            closed = self._closed
            if not closed:
                self._in_flight += 1
        if closed:
            self._logger.warning("could not deliver %s: the worker has stopped", what)
            _call_safely(finished, self._logger)
            return
        _PendingSend(self, what, start, finished).attempt(1)

    def _settle(self, finished: Callable[[], None]) -> None:
        try:
            _call_safely(finished, self._logger)
        finally:
            with self._gate:
                self._in_flight -= 1
                self._gate.notify_all()

    def _retry_delay_after(self, what: str, error: BaseException, attempt: int) -> float | None:
        """After attempt ``attempt`` failed with ``error``: seconds until the next one, or ``None`` to give up."""
        if not isinstance(error, grpc.RpcError):
            if self._stopping.is_set():
                # Expected for work that outlived stop()'s grace period: the channel is closed.
                self._logger.warning("could not deliver %s after the worker stopped: %s", what, error)
            else:
                self._logger.error("could not deliver %s", what, exc_info=error)
            return None
        if is_lease_lost(error):
            self._logger.warning("dropping %s: the work item is no longer leased (%s)", what, describe(error))
            return None
        code = status_code(error)
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            self._logger.error(
                "the backend refused %s as over one of its limits (%s); not retrying it, the backend decides"
                " what becomes of the work item",
                what,
                describe(error),
            )
            return None
        if code not in _RETRYABLE or attempt == self._attempts:
            self._logger.error("could not deliver %s: %s", what, describe(error))
            return None
        self._logger.info("retrying %s after %s", what, describe(error))
        return self._retry_delay * attempt


def _call_safely(fn: Callable[[], None], logger: logging.Logger) -> None:
    try:
        fn()
    except Exception:
        logger.exception("a completion's follow-up failed")


class _PendingSend:
    """One completion sent without waiting: each attempt's future calls back :meth:`_done` when it is over."""

    __slots__ = ("_finished", "_future", "_sender", "_start", "_what")

    def __init__(
        self, sender: CompletionSender, what: str, start: Callable[[], grpc.Future[Any]], finished: Callable[[], None]
    ) -> None:
        self._sender = sender
        self._what = what
        self._start = start
        self._finished = finished
        # gRPC cancels a call whose future is collected, and nothing else holds it: this keeps it until it is
        # over (gRPC holds this object through the callback meanwhile).
        self._future: grpc.Future[Any] | None = None

    def attempt(self, number: int) -> None:
        try:
            future = self._start()
        except Exception as error:  # the call could not even start (a closed channel, an interceptor's failure)
            self._failed(error, number)
            return
        self._future = future
        future.add_done_callback(partial(self._done, number))

    def _done(self, number: int, future: grpc.Future[Any]) -> None:
        try:
            future.result()
        except Exception as error:  # an RpcError, or the cancellation of a call cut by a closing channel
            self._failed(error, number)
            return
        finally:
            self._future = None
        self._sender._settle(self._finished)

    def _failed(self, error: BaseException, number: int) -> None:
        sender = self._sender
        delay = sender._retry_delay_after(self._what, error, number)
        if delay is None:
            sender._settle(self._finished)
            return
        # Waiting happens on a thread of its own: never on gRPC's, which completes every other call too.
        threading.Thread(
            target=self._retry, args=(delay, number + 1), name="durabletask-completion-retry", daemon=True
        ).start()

    def _retry(self, delay: float, number: int) -> None:
        # A stopping worker gets no second chance: its channel is about to close.
        if self._sender._stopping.wait(delay):
            self._sender._settle(self._finished)
            return
        self.attempt(number)
