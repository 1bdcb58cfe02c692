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
from durabletask._grpc.resiliency import FailureTracker, is_transport_failure
from durabletask.grpc_options import GrpcClientResiliencyOptions, GrpcRetryPolicyOptions


@dataclass
class ChannelHealth:
    """Decides when an owned channel should be rebuilt: after the threshold of consecutive transport failures
    (counted by a :class:`FailureTracker`, as Microsoft's client counts them), at most once per
    ``min_recreate_interval_seconds``.
    """

    options: GrpcClientResiliencyOptions
    clock: Callable[[], float] = time.monotonic
    _last_rebuild: float | None = None
    _tracker: FailureTracker = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._tracker = FailureTracker(threshold=self.options.channel_recreate_failure_threshold)

    def record_success(self) -> None:
        self._tracker.record_success()

    def record_failure(self, method: str, code: grpc.StatusCode) -> bool:
        """Count a failure; ``True`` means the caller should rebuild the channel now."""
        if not is_transport_failure(method, code):
            self._tracker.record_success()
            return False
        if not self._tracker.record_failure():
            return False
        with self._lock:
            now = self.clock()
            if self._last_rebuild is not None and now - self._last_rebuild < self.options.min_recreate_interval_seconds:
                return False
            self._last_rebuild = now
        self._tracker.record_success()  # counting starts again on the new channel
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
