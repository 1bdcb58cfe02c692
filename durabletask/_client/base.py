"""What both client shells share: constructor settings, logging, retry/health state and the event-loop guard."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import grpc

from durabletask._client.requests import RpcRequest
from durabletask._client.resilience import ChannelHealth, RetryPlan
from durabletask._errors import SyncCallInEventLoopError
from durabletask._grpc.channel import get_default_host_address
from durabletask._grpc.errors import RpcStatusError, map_rpc_error
from durabletask._grpc.large_payloads import PayloadBoundary, payload_limit
from durabletask._instance_models import DEFAULT_CONVERTER, DataConverter
from durabletask._logging import resolve_logger
from durabletask.grpc_options import GrpcChannelOptions, GrpcClientResiliencyOptions, GrpcRetryPolicyOptions
from durabletask.payload.store import PayloadStore

F = TypeVar("F", bound=Callable[..., Any])


def make_logger(
    suffix: str,
    log_handler: logging.Handler | None,
    log_formatter: logging.Formatter | None,
    logger: logging.Logger | None,
) -> logging.Logger:
    """The logger a client writes to, set up as Microsoft's clients set theirs up.

    A given ``logger`` is used as is. Otherwise the client gets a private ``durabletask-<suffix>`` logger
    (outside the :mod:`logging` hierarchy) that prints INFO and above to stderr, or to the deprecated
    ``log_handler``/``log_formatter``, which warn like the worker's.
    """
    return resolve_logger(f"durabletask-{suffix}", log_handler, log_formatter, logger)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def blocking(method: F) -> F:
    """Mark a sync client method that blocks the calling thread until the RPC is done.

    Like Microsoft's client it simply blocks, also inside a running event loop (a FastAPI or aiohttp handler,
    Jupyter, a pytest-asyncio test). A client built with ``fail_in_event_loop=True`` raises
    :class:`SyncCallInEventLoopError` there instead, because such a call stalls every other task on the loop
    for as long as the RPC takes. Threads without a running loop (including ``asyncio.to_thread``) never fail.
    """

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self._fail_in_event_loop and _loop_running():
            raise SyncCallInEventLoopError(
                f"TaskHubGrpcClient.{method.__name__}() blocks and was called from a running asyncio event loop "
                "(the client was built with fail_in_event_loop=True); use AsyncTaskHubGrpcClient and "
                f"'await client.{method.__name__}(...)' instead, or move the call to a thread with "
                "asyncio.to_thread()"
            )
        return method(self, *args, **kwargs)

    return guarded  # type: ignore[return-value]


def describe(request: RpcRequest) -> str:
    """One line naming an operation and the instance or entity it is for, for the client's log."""
    # Messages without an instanceId field raise AttributeError, which getattr turns into "".
    target = getattr(request.request, "instanceId", "")
    return f"{request.method} for '{target}'" if target else request.method


class Attempt(NamedTuple):
    """What to do after a failed call: the error to raise, the pause before retrying, and channel health."""

    error: RpcStatusError
    pause: float | None
    rebuild_channel: bool


def deadline_for(request: RpcRequest) -> float | None:
    """The monotonic time by which every attempt of ``request`` must be done."""
    return None if request.timeout is None else time.monotonic() + request.timeout


def time_left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (never negative), or ``None`` without one."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


class ClientSettings:
    """Constructor settings common to both clients, resolved once."""

    def __init__(
        self,
        *,
        log_name: str,
        host_address: str | None,
        metadata: list[tuple[str, str]] | None,
        log_handler: logging.Handler | None,
        log_formatter: logging.Formatter | None,
        logger: logging.Logger | None,
        secure_channel: bool,
        channel_options: GrpcChannelOptions | None,
        resiliency_options: GrpcClientResiliencyOptions | None,
        default_version: str | None,
        payload_store: PayloadStore | None,
        data_converter: DataConverter | None,
        emit_trace_spans: bool,
        root_certificates: bytes | None = None,
    ) -> None:
        self.payload_store: PayloadStore | None = payload_store
        # Requests go out and responses come back through it: the rest of the client never sees a token.
        self.payloads = PayloadBoundary(payload_store) if payload_store is not None else None
        self.payload_limit = payload_limit(payload_store)
        self.logger = make_logger(log_name, log_handler, log_formatter, logger)
        self.host_address = host_address or get_default_host_address()
        self.metadata = list(metadata) if metadata else None
        self.secure_channel = secure_channel
        self.root_certificates = root_certificates
        self.channel_options = channel_options
        self.default_version = default_version
        self.converter: DataConverter = data_converter if data_converter is not None else DEFAULT_CONVERTER
        self.emit_trace_spans = emit_trace_spans
        self.health = ChannelHealth(resiliency_options or GrpcClientResiliencyOptions())
        # A channel-level retry policy makes gRPC retry by itself; retrying again here would multiply attempts.
        own_retries = channel_options is None or channel_options.retry_policy is None
        self.retry = RetryPlan(GrpcRetryPolicyOptions() if own_retries else None)

    def after_failure(self, request: RpcRequest, raw: grpc.RpcError, attempt: int, deadline: float | None) -> Attempt:
        """Map a failed attempt's error, update channel health, and decide whether to retry."""
        error = map_rpc_error(raw, method=request.method)
        rebuild = self.health.record_failure(request.method, error.code())
        pause = self.retry.delay(request, error, attempt, time_left(deadline))
        self.logger.debug("%s attempt %d failed: %s", request.method, attempt, error)
        return Attempt(error, pause, rebuild)

    def purges_payloads(self) -> bool:
        """Whether purging an instance should also delete its stored payloads (the store's opt-in)."""
        store = self.payload_store
        return (
            store is not None
            and bool(getattr(store.options, "delete_payloads_on_purge", False))
            and callable(getattr(store, "delete_instance_payloads", None))
        )

    def delete_payloads(self, instance_ids: Sequence[str]) -> None:
        """Delete the payloads stored for purged instances; a failure is logged, the purge stands."""
        delete = getattr(self.payload_store, "delete_instance_payloads", None)
        if delete is None:
            return
        for instance_id in instance_ids:
            try:
                count = delete(instance_id)
            except Exception as exc:
                self.logger.warning("purged '%s' but could not delete its stored payloads: %s", instance_id, exc)
                continue
            self.logger.info("deleted %d stored payload(s) of purged instance '%s'", count, instance_id)
