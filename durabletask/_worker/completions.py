"""Sending work-item results back: retries with backoff through backend outages, lost leases logged and dropped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import grpc

from durabletask._worker.failures import describe, is_lease_lost, status_code
from durabletask._worker.stream import backoff_delay

# Transient transport errors worth another try; anything else will not improve by retrying. In
# particular RESOURCE_EXHAUSTED: a result over a size limit is refused the same way every time.
_RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE})

#: How long a result is offered again while the backend cannot be reached, from the first failed attempt. The
#: worker is not told its leases' length; this outlasts a backend restart and stays within the lease timeouts
#: backends use (the emulator's default is 300 s). A backend that has let the lease go answers NOT_FOUND or
#: FAILED_PRECONDITION, which ends the retries at once, and hands the work item out again.
DEFAULT_DELIVERY_RETRY_SECONDS = 60.0
#: Full-jitter exponential backoff between attempts: up to 0.1 s after the first failure, doubling, capped at 2 s.
DEFAULT_RETRY_BASE_SECONDS = 0.1
DEFAULT_RETRY_CAP_SECONDS = 2.0


class CompletionSender:
    """Delivers one completion or abandonment, never raising.

    While the backend is unreachable (``UNAVAILABLE``) a result is sent again with jittered exponential backoff
    for up to ``retry_for`` seconds, so a short outage (a restart of the backend) does not make the work item run
    again; the retries end early when the worker is stopping (``stopping`` is set). A rejection because the work
    item's lease is gone (another worker owns it, or it expired) is expected after reconnects and long pauses:
    the backend redelivers the work, so the result is dropped with a warning. Each call blocks only its own
    thread, so completions go out concurrently.
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        stopping: threading.Event | None = None,
        retry_for: float = DEFAULT_DELIVERY_RETRY_SECONDS,
        retry_base: float = DEFAULT_RETRY_BASE_SECONDS,
        retry_cap: float = DEFAULT_RETRY_CAP_SECONDS,
        timeout: float | None = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if retry_for < 0 or retry_base < 0 or retry_cap < retry_base:
            raise ValueError(
                f"need retry_for >= 0 and 0 <= retry_base <= retry_cap, got {retry_for}, {retry_base}, {retry_cap}"
            )
        self._logger = logger
        self._stopping = stopping or threading.Event()
        self._retry_for = retry_for
        self._retry_base = retry_base
        self._retry_cap = retry_cap
        self._clock = clock
        self.timeout = timeout
        # Sends in flight: the channel must not be closed under them (grpc can crash the process when an RPC
        # starts on a closed intercepted channel), so closing waits for them and later sends are dropped.
        # The lock is taken directly twice per send (entering the Condition is a Python call); the Condition
        # over it is notified only while close() or wait_delivered() waits on it.
        self._lock = threading.Lock()
        self._gate = threading.Condition(self._lock)
        self._waiting = 0
        self._in_flight = 0
        self._retrying = 0  # sends waiting for an unreachable backend
        self._closed = False

    def close(self, timeout: float) -> bool:
        """Refuse new sends and wait up to ``timeout`` seconds for those in flight; ``True`` if none remain."""
        with self._lock:
            self._closed = True
            self._waiting += 1
            try:
                return self._gate.wait_for(lambda: self._in_flight == 0, timeout)
            finally:
                self._waiting -= 1

    @property
    def retrying(self) -> int:
        """How many results are waiting for the backend to be reachable again."""
        with self._lock:
            return self._retrying

    def wait_delivered(self, stopping: threading.Event) -> None:
        """Wait until no result is waiting for the backend, or ``stopping`` is set.

        The stream asks for work only after this: a backend that reoffered the work of a vanished stream
        would otherwise hand the same items straight back, and a result still on its way would then be
        refused as stale and its work run twice. Each waiting result gives up within ``retry_for``.
        """
        with self._lock:
            self._waiting += 1
            try:
                while self._retrying and not stopping.is_set():
                    self._gate.wait(0.25)  # stopping is an Event of its own: look at it now and then
            finally:
                self._waiting -= 1

    def send(self, what: str, call: Callable[[], object]) -> bool:
        """Run ``call`` (one unary RPC); ``True`` if the backend accepted it."""
        with self._lock:
            if self._closed:
                self._logger.warning("could not deliver %s: the worker has stopped", what)
                return False
            self._in_flight += 1
        outage = _Outage()
        try:
            return self._attempts(what, call, outage)
        finally:
            with self._lock:
                self._in_flight -= 1
                if outage.counted:
                    self._retrying -= 1
                if self._waiting:
                    self._gate.notify_all()

    def _attempts(self, what: str, call: Callable[[], object], outage: _Outage) -> bool:
        while True:
            try:
                call()
            except grpc.RpcError as error:
                if not self._retryable(what, error):
                    return False
                delay = self._next_delay(what, error, outage)
                if delay is None:
                    return False
                # A stopping worker gets no more tries: its channel is about to close.
                if self._stopping.wait(delay):
                    self._logger.warning("could not deliver %s: the worker stopped while retrying it", what)
                    return False
            except Exception as error:
                if self._stopping.is_set():
                    # Expected for work that outlived stop()'s grace period: the channel is closed.
                    self._logger.warning("could not deliver %s after the worker stopped: %s", what, error)
                else:
                    self._logger.exception("could not deliver %s", what)
                return False
            else:
                if outage.retries:
                    self._logger.info("delivered %s after %d retries", what, outage.retries)
                return True

    def _next_delay(self, what: str, error: grpc.RpcError, outage: _Outage) -> float | None:
        """How long to wait before the next attempt; ``None`` once the retries have lasted ``retry_for``."""
        now = self._clock()
        if not outage.counted:
            outage.began, outage.counted = now, True
            with self._lock:
                self._retrying += 1
        elapsed = now - outage.began
        if elapsed >= self._retry_for:
            self._logger.error(
                "could not deliver %s: the backend stayed unreachable for %.1fs (%d attempts): %s",
                what,
                elapsed,
                outage.retries + 1,
                describe(error),
            )
            return None
        # The first retry is worth a line; the rest of an outage would flood the log.
        level = logging.INFO if outage.retries == 0 else logging.DEBUG
        self._logger.log(level, "retrying %s while the backend is unreachable (%s)", what, describe(error))
        delay = backoff_delay(outage.retries, self._retry_base, self._retry_cap)
        outage.retries += 1
        return min(delay, self._retry_for - elapsed)

    def _retryable(self, what: str, error: grpc.RpcError) -> bool:
        """Whether another attempt can succeed; logs why not when it cannot."""
        if is_lease_lost(error):
            self._logger.warning("dropping %s: the work item is no longer leased (%s)", what, describe(error))
            return False
        code = status_code(error)
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            self._logger.error(
                "the backend refused %s as over one of its limits (%s); not retrying it, the backend decides"
                " what becomes of the work item",
                what,
                describe(error),
            )
            return False
        if code not in _RETRYABLE:
            self._logger.error("could not deliver %s: %s", what, describe(error))
            return False
        return True


class _Outage:
    """One send's retries: how many so far, when the first attempt failed, and whether it counts as retrying."""

    __slots__ = ("began", "counted", "retries")

    def __init__(self) -> None:
        self.began = 0.0
        self.counted = False
        self.retries = 0
