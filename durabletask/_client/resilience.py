"""Retry and channel-health decisions shared by both client shells (pure: the shells sleep and rebuild)."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from durabletask._client.requests import WAITING_RPCS, RpcRequest
from durabletask._grpc.errors import RpcStatusError
from durabletask.grpc_options import GrpcClientResiliencyOptions, GrpcRetryPolicyOptions


def is_transport_failure(method: str, code: grpc.StatusCode) -> bool:
    """Whether a failure says the connection, not the request, is the problem.

    A deadline on a call that waits for an instance is the caller's timeout expiring, not a sign of a
    broken channel.
    """
    if code == grpc.StatusCode.UNAVAILABLE:
        return True
    return code == grpc.StatusCode.DEADLINE_EXCEEDED and method not in WAITING_RPCS


@dataclass
class ChannelHealth:
    """Counts consecutive transport failures and decides when an owned channel should be rebuilt.

    Thread-safe because one sync client is commonly shared by many threads.
    """

    options: GrpcClientResiliencyOptions
    clock: Callable[[], float] = time.monotonic
    _failures: int = 0
    _last_rebuild: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0

    def record_failure(self, method: str, code: grpc.StatusCode) -> bool:
        """Count a failure; ``True`` means the caller should rebuild the channel now."""
        with self._lock:
            if not is_transport_failure(method, code):
                self._failures = 0
                return False
            self._failures += 1
            threshold = self.options.channel_recreate_failure_threshold
            if threshold <= 0 or self._failures < threshold:
                return False
            now = self.clock()
            if self._last_rebuild is not None and now - self._last_rebuild < self.options.min_recreate_interval_seconds:
                return False
            self._last_rebuild = now
            self._failures = 0
            return True


@dataclass(frozen=True)
class RetryPlan:
    """When to repeat a failed call: only reads, only for the policy's status codes, within the deadline."""

    policy: GrpcRetryPolicyOptions | None
    rng: Callable[[], float] = random.random

    def delay(self, request: RpcRequest, error: RpcStatusError, attempt: int, remaining: float | None) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or ``None`` to give up and raise ``error``.

        A wait with a timeout keeps retrying until that timeout, past ``max_attempts``: its caller asked
        to wait that long, and a server restart (a few hundred milliseconds) must not end the wait early.
        """
        policy = self.policy
        if policy is None or not request.idempotent:
            return None
        waits_until_deadline = request.method in WAITING_RPCS and remaining is not None
        if attempt >= policy.max_attempts and not waits_until_deadline:
            return None
        if error.code().name not in policy.retryable_status_codes:
            return None
        try:
            growth = policy.backoff_multiplier ** (attempt - 1)
        except OverflowError:  # a wait retries until its timeout: 2.0 ** 1024 is past a float
            growth = math.inf
        ceiling = min(policy.max_backoff_seconds, policy.initial_backoff_seconds * growth)
        # Full jitter: spreads retries from many clients after a shared outage.
        pause = ceiling * self.rng()
        if remaining is not None and pause >= remaining:
            return None
        return pause
