"""Transport options for gRPC channels, client calls and worker streams.

The classes are mutable dataclasses, as Microsoft's: validation runs when one is built, and the SDK reads the
fields when it uses them (a channel is configured when it is made).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from durabletask import _grpc_polling
from durabletask._grpc_polling import ThreadPolling

# Microsoft's names only: `from durabletask.grpc_options import *` binds what it binds with Microsoft's module.
# enable_thread_polling and ThreadPolling are additions, imported by name.
__all__ = [
    "GrpcChannelOptions",
    "GrpcClientResiliencyOptions",
    "GrpcRetryPolicyOptions",
    "GrpcWorkerResiliencyOptions",
]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _duration(seconds: float) -> str:
    """Render ``seconds`` as a gRPC service-config duration (``"0.05s"``), refusing zero."""
    text = f"{seconds:.9f}".rstrip("0")
    if text.endswith("."):
        text += "0"
    if float(text) == 0:
        raise ValueError(f"duration {seconds!r} is too small to express in gRPC's nanosecond resolution")
    return f"{text}s"


@dataclass(slots=True, kw_only=True)
class GrpcRetryPolicyOptions:
    """Transport-level retries performed by gRPC itself (via the channel's service config).

    Attributes:
        max_attempts: Total attempts including the first one (at least 2).
        initial_backoff_seconds: Delay before the first retry.
        max_backoff_seconds: Upper bound for any single delay.
        backoff_multiplier: Growth factor between successive delays.
        retryable_status_codes: gRPC status code names that trigger a retry.
    """

    max_attempts: int = 4
    initial_backoff_seconds: float = 0.05
    max_backoff_seconds: float = 0.25
    backoff_multiplier: float = 2.0
    retryable_status_codes: list[str] = field(default_factory=lambda: ["UNAVAILABLE"])

    def __post_init__(self) -> None:
        _require(self.max_attempts >= 2, "max_attempts must be >= 2")
        _require(self.initial_backoff_seconds > 0, "initial_backoff_seconds must be > 0")
        _require(self.max_backoff_seconds > 0, "max_backoff_seconds must be > 0")
        _require(self.backoff_multiplier > 0, "backoff_multiplier must be > 0")
        _require(
            self.max_backoff_seconds >= self.initial_backoff_seconds,
            "max_backoff_seconds must be >= initial_backoff_seconds",
        )
        _require(len(self.retryable_status_codes) > 0, "retryable_status_codes cannot be empty")
        _duration(self.initial_backoff_seconds)
        _duration(self.max_backoff_seconds)

    def to_service_config(self) -> dict[str, Any]:
        """The gRPC service config applying this policy to every method."""
        policy = {
            "maxAttempts": self.max_attempts,
            "initialBackoff": _duration(self.initial_backoff_seconds),
            "maxBackoff": _duration(self.max_backoff_seconds),
            "backoffMultiplier": self.backoff_multiplier,
            "retryableStatusCodes": list(self.retryable_status_codes),
        }
        return {"methodConfig": [{"name": [{}], "retryPolicy": policy}]}


@dataclass(slots=True, kw_only=True)
class GrpcChannelOptions:
    """Channel-level settings: message size limits, keepalive, retries and raw gRPC options.

    Attributes:
        max_receive_message_length: Largest inbound message in bytes (gRPC default: 4 MiB).
        max_send_message_length: Largest outbound message in bytes.
        keepalive_time_ms: Interval between keepalive pings.
        keepalive_timeout_ms: How long to wait for a ping acknowledgement.
        keepalive_permit_without_calls: Whether pings are sent with no call in flight.
        retry_policy: Transport retries configured through the service config.
        raw_options: Extra ``(name, value)`` channel arguments passed through unchanged.
    """

    max_receive_message_length: int | None = None
    max_send_message_length: int | None = None
    keepalive_time_ms: int | None = None
    keepalive_timeout_ms: int | None = None
    keepalive_permit_without_calls: bool | None = None
    retry_policy: GrpcRetryPolicyOptions | None = None
    raw_options: list[tuple[str, Any]] = field(default_factory=lambda: [])

    def to_grpc_options(self) -> list[tuple[str, Any]]:
        """The channel arguments for ``grpc.insecure_channel``/``secure_channel`` (raw options first)."""
        options = list(self.raw_options)
        named: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", self.max_receive_message_length),
            ("grpc.max_send_message_length", self.max_send_message_length),
            ("grpc.keepalive_time_ms", self.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", self.keepalive_timeout_ms),
        ]
        if self.keepalive_permit_without_calls is not None:
            named.append(("grpc.keepalive_permit_without_calls", int(self.keepalive_permit_without_calls)))
        options.extend((name, value) for name, value in named if value is not None)
        if self.retry_policy is not None:
            options.append(("grpc.enable_retries", 1))
            options.append(("grpc.service_config", json.dumps(self.retry_policy.to_service_config())))
        return options


@dataclass(slots=True, kw_only=True)
class GrpcWorkerResiliencyOptions:
    """How a worker detects a dead work-item stream and reconnects.

    Attributes:
        hello_timeout_seconds: Deadline for the initial handshake call.
        silent_disconnect_timeout_seconds: Reconnect after this long without any message (0 disables).
        channel_recreate_failure_threshold: Consecutive failures before the channel is rebuilt (0 never).
        reconnect_backoff_base_seconds: Base of the jittered exponential reconnect delay.
        reconnect_backoff_cap_seconds: Upper bound of that delay.
    """

    hello_timeout_seconds: float = 30.0
    silent_disconnect_timeout_seconds: float = 120.0
    channel_recreate_failure_threshold: int = 5
    reconnect_backoff_base_seconds: float = 1.0
    reconnect_backoff_cap_seconds: float = 30.0

    def __post_init__(self) -> None:
        _require(self.hello_timeout_seconds > 0, "hello_timeout_seconds must be > 0")
        _require(self.silent_disconnect_timeout_seconds >= 0, "silent_disconnect_timeout_seconds must be >= 0")
        _require(self.channel_recreate_failure_threshold >= 0, "channel_recreate_failure_threshold must be >= 0")
        _require(self.reconnect_backoff_base_seconds > 0, "reconnect_backoff_base_seconds must be > 0")
        _require(self.reconnect_backoff_cap_seconds > 0, "reconnect_backoff_cap_seconds must be > 0")
        _require(
            self.reconnect_backoff_cap_seconds >= self.reconnect_backoff_base_seconds,
            "reconnect_backoff_cap_seconds must be >= reconnect_backoff_base_seconds",
        )


@dataclass(slots=True, kw_only=True)
class GrpcClientResiliencyOptions:
    """How a client reacts to repeated transport failures.

    Attributes:
        channel_recreate_failure_threshold: Consecutive transport failures (UNAVAILABLE, or a
            deadline on a non-waiting call) before the channel is rebuilt; 0 never rebuilds.
        min_recreate_interval_seconds: Minimum time between two rebuilds.
    """

    channel_recreate_failure_threshold: int = 5
    min_recreate_interval_seconds: float = 30.0

    def __post_init__(self) -> None:
        _require(self.channel_recreate_failure_threshold >= 0, "channel_recreate_failure_threshold must be >= 0")
        _require(self.min_recreate_interval_seconds >= 0, "min_recreate_interval_seconds must be >= 0")


def enable_thread_polling() -> ThreadPolling:
    """Opt in to thread polling for this process's gRPC clients; call it before anything imports ``grpc``.

    By default grpcio reads every client connection on threads of its own and hands each message over to the
    thread waiting for it. This imports ``grpc`` now with its ``event_engine_client`` experiment off, so the
    waiting thread reads the connection itself: less CPU per call (README, "gRPC client polling"). The setting
    holds for every gRPC client of the process, not only the SDK's, which is why it is never made implicitly.
    The environment is restored right after the import, so child processes inherit nothing. An addition to
    the compatible API.

    Returns:
        What happened: ``APPLIED``; ``CHOSEN_BY_ENVIRONMENT`` when ``GRPC_EXPERIMENTS`` is set (even empty);
        ``UNVERIFIED_GRPC`` on a grpcio it was not verified on (1.85.x so far); ``NO_GRPC``; or
        ``GRPC_ALREADY_IMPORTED``, with a ``RuntimeWarning``, when it was called too late to change anything.
        Later calls return the first call's result.
    """
    return _grpc_polling.enable()
