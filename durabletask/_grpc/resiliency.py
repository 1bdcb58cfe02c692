"""Counting transport failures, and the interceptors that count them on a channel (Microsoft's public names).

Our clients count failures in their one ``_call`` wrapper (``durabletask._client.resilience.ChannelHealth``,
built on :class:`FailureTracker`); the interceptors are for channels an application builds or wraps itself,
exactly as it would use Microsoft's: they count every unary call's outcome and call ``on_recreate`` once the
threshold of consecutive transport failures is reached. The failing call's own error still reaches its caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc
import grpc.aio

__all__ = [
    "LONG_POLL_RPCS",
    "AsyncClientResiliencyInterceptor",
    "ClientResiliencyInterceptor",
    "FailureTracker",
    "is_transport_failure",
]

#: Calls that wait on the server until an instance reaches a state: a deadline on them is the caller's timeout
#: expiring, not a sign of a broken channel.
LONG_POLL_RPCS = frozenset({"WaitForInstanceStart", "WaitForInstanceCompletion"})

if TYPE_CHECKING:
    _UnaryUnary: TypeAlias = grpc.UnaryUnaryClientInterceptor[Any, Any]
    _AioUnaryUnary: TypeAlias = grpc.aio.UnaryUnaryClientInterceptor[Any, Any]
else:
    _UnaryUnary = grpc.UnaryUnaryClientInterceptor
    _AioUnaryUnary = grpc.aio.UnaryUnaryClientInterceptor


def is_transport_failure(method: str, code: grpc.StatusCode | None) -> bool:
    """Whether a failed call says the connection, not the request, is the problem.

    ``method`` is the RPC's name or its full path (``/TaskHubSidecarService/GetInstance``).
    """
    if code == grpc.StatusCode.UNAVAILABLE:
        return True
    return code == grpc.StatusCode.DEADLINE_EXCEEDED and method.rsplit("/", 1)[-1] not in LONG_POLL_RPCS


@dataclass(slots=True, kw_only=True)
class FailureTracker:
    """Counts consecutive transport failures; thread-safe, since one sync client is shared by many threads.

    Attributes:
        threshold: The count at which :meth:`record_failure` answers ``True``; 0 or less never does.
        consecutive_failures: Failures since the last success.
    """

    threshold: int
    consecutive_failures: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def record_failure(self) -> bool:
        """Count one failure; ``True`` when the count has reached the threshold (the channel should be rebuilt)."""
        if self.threshold <= 0:
            return False
        with self._lock:
            self.consecutive_failures += 1
            return self.consecutive_failures >= self.threshold

    def record_success(self) -> None:
        """A call got through (or failed for a reason of its own): start counting again."""
        with self._lock:
            self.consecutive_failures = 0


def _record(tracker: FailureTracker, on_recreate: Callable[[], None], method: str, error: BaseException | None) -> None:
    code_of = getattr(error, "code", None)
    code = code_of() if callable(code_of) else None
    if error is not None and is_transport_failure(method, code):
        if tracker.record_failure():
            on_recreate()
        return
    tracker.record_success()


class ClientResiliencyInterceptor(_UnaryUnary):
    """Counts the outcome of every unary call on a sync channel; calls ``on_recreate`` at the threshold.

    ``on_recreate`` runs on the calling thread right after the failing call returns, so it should only
    schedule the rebuild (a thread of its own), not do it.

    Args:
        failure_tracker: The counter shared with whoever rebuilds the channel.
        on_recreate: Called each time a transport failure brings the count to the threshold or past it.
    """

    def __init__(self, failure_tracker: FailureTracker, on_recreate: Callable[[], None]) -> None:
        self._failure_tracker = failure_tracker
        self._on_recreate = on_recreate

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        response = continuation(client_call_details, request)
        # The outcome is known once the call is done: a failed call's result holds its RpcError.
        _record(self._failure_tracker, self._on_recreate, client_call_details.method, response.exception())
        return response


class AsyncClientResiliencyInterceptor(_AioUnaryUnary):
    """The asyncio counterpart of :class:`ClientResiliencyInterceptor` (``on_recreate`` is a plain function).

    The outcome is read from the finished call, which an asyncio interceptor gets before the call is done, so
    it is awaited here first; the caller then awaits the same finished call. (Microsoft's class reads it from
    the continuation alone, which in ``grpc.aio`` returns the call without raising, so it never counts a
    failure: docs/conformance.md.) An error that is not an RPC error resets the count; a cancellation passes
    through uncounted.
    """

    def __init__(self, failure_tracker: FailureTracker, on_recreate: Callable[[], None]) -> None:
        self._failure_tracker = failure_tracker
        self._on_recreate = on_recreate

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        method = client_call_details.method
        try:
            call = await continuation(client_call_details, request)
            await call
        except grpc.aio.AioRpcError as error:
            _record(self._failure_tracker, self._on_recreate, method, error)
            raise
        except Exception:
            self._failure_tracker.record_success()
            raise
        _record(self._failure_tracker, self._on_recreate, method, None)
        return call
