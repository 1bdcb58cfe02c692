"""Sending work-item results back: bounded retries on transport errors, lost leases logged and dropped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

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
            except grpc.RpcError as error:
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
                if code not in _RETRYABLE or attempt == self._attempts:
                    self._logger.error("could not deliver %s: %s", what, describe(error))
                    return False
                self._logger.info("retrying %s after %s", what, describe(error))
                # A stopping worker gets no second chance: its channel is about to close.
                if self._stopping.wait(self._retry_delay * attempt):
                    return False
            except Exception as error:
                if self._stopping.is_set():
                    # Expected for work that outlived stop()'s grace period: the channel is closed.
                    self._logger.warning("could not deliver %s after the worker stopped: %s", what, error)
                else:
                    self._logger.exception("could not deliver %s", what)
                return False
        return False
