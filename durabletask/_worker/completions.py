"""Sending work-item results back: bounded retries on transport errors, lost leases logged and dropped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import grpc

from durabletask._worker.failures import describe, is_lease_lost, status_code

# Transient transport errors worth another try; anything else will not improve by retrying.
_RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})


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

    def send(self, what: str, call: Callable[[], object]) -> bool:
        """Run ``call`` (one unary RPC); ``True`` if the backend accepted it."""
        for attempt in range(1, self._attempts + 1):
            try:
                call()
                return True
            except grpc.RpcError as error:
                if is_lease_lost(error):
                    self._logger.warning("dropping %s: the work item is no longer leased (%s)", what, describe(error))
                    return False
                retry = status_code(error) in _RETRYABLE and attempt < self._attempts
                if not retry:
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
