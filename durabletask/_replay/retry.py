"""Retry policies for activities and sub-orchestrations, and the delay arithmetic on the orchestration clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from durabletask._replay.failures import FailureDetails

_ZERO = timedelta(0)


class RetryPolicy:
    """How a failed activity or sub-orchestration is retried, using durable timers between attempts.

    Args:
        first_retry_interval: Delay before the first retry.
        max_number_of_attempts: Total attempts including the first one (at least 1).
        backoff_coefficient: Multiplier applied to the delay after each retry (at least 1).
        max_retry_interval: Upper bound for any single delay.
        retry_timeout: No retry is made whose timer would fire at or after the first attempt's time plus this
            (the first attempt's time is the orchestration time at which the call was made).
        handle_failure: Optional predicate; a failure is retried only if it returns ``True``.
    """

    def __init__(
        self,
        *,
        first_retry_interval: timedelta,
        max_number_of_attempts: int,
        backoff_coefficient: float | None = 1.0,
        max_retry_interval: timedelta | None = None,
        retry_timeout: timedelta | None = None,
        handle_failure: Callable[[FailureDetails], bool] | None = None,
    ) -> None:
        if first_retry_interval < _ZERO:
            raise ValueError("first_retry_interval must be >= 0")
        if max_number_of_attempts < 1:
            raise ValueError("max_number_of_attempts must be >= 1")
        if backoff_coefficient is not None and backoff_coefficient < 1:
            raise ValueError("backoff_coefficient must be >= 1")
        if max_retry_interval is not None and max_retry_interval < _ZERO:
            raise ValueError("max_retry_interval must be >= 0")
        if retry_timeout is not None and retry_timeout < _ZERO:
            raise ValueError("retry_timeout must be >= 0")
        self._first_retry_interval = first_retry_interval
        self._max_number_of_attempts = max_number_of_attempts
        self._backoff_coefficient = backoff_coefficient
        self._max_retry_interval = max_retry_interval
        self._retry_timeout = retry_timeout
        self._handle_failure = handle_failure

    @property
    def first_retry_interval(self) -> timedelta:
        """Delay before the first retry."""
        return self._first_retry_interval

    @property
    def max_number_of_attempts(self) -> int:
        """Total number of attempts, including the first."""
        return self._max_number_of_attempts

    @property
    def backoff_coefficient(self) -> float | None:
        """Multiplier applied to the delay after each retry."""
        return self._backoff_coefficient

    @property
    def max_retry_interval(self) -> timedelta | None:
        """Upper bound for a single delay."""
        return self._max_retry_interval

    @property
    def retry_timeout(self) -> timedelta | None:
        """How long after the first attempt a retry may still start."""
        return self._retry_timeout

    @property
    def handle_failure(self) -> Callable[[FailureDetails], bool] | None:
        """The predicate deciding which failures are retried (``None``: all of them)."""
        return self._handle_failure

    def _delay(self, attempts: int) -> timedelta:
        coefficient = self._backoff_coefficient if self._backoff_coefficient is not None else 1.0
        seconds = self._first_retry_interval.total_seconds() * coefficient ** (attempts - 1)
        if self._max_retry_interval is not None:
            seconds = min(seconds, self._max_retry_interval.total_seconds())
        return timedelta(seconds=seconds)

    def retry_expired(self, attempts: int, started: datetime, now: datetime) -> bool:
        """Whether the retry after attempt ``attempts``, failed at ``now``, would start too late.

        Args:
            attempts: How many attempts have run.
            started: When the first attempt was scheduled (orchestration time).
            now: When the latest attempt failed (orchestration time).
        """
        if self._retry_timeout is None or attempts >= self._max_number_of_attempts:
            return False
        return now + self._delay(attempts) >= started + self._retry_timeout

    def next_delay(
        self, attempts: int, started: datetime, now: datetime, failure: FailureDetails | None = None
    ) -> timedelta | None:
        """The delay before attempt ``attempts + 1``, or ``None`` if no further attempt is allowed.

        ``started`` and ``now`` are orchestration-clock times (never the wall clock), so replays agree.
        With ``retry_timeout``, a retry is made only if its timer fires before ``started + retry_timeout``:
        Microsoft's SDK checks the wall clock against that instant each time it replays, so a retry whose
        timer fires later is given up when the timer fires; here it is known when the attempt fails.

        Args:
            attempts: How many attempts have run.
            started: When the first attempt was scheduled (orchestration time).
            now: When the latest attempt failed (orchestration time).
            failure: The latest failure, for the policy's ``handle_failure`` predicate.
        """
        if attempts >= self._max_number_of_attempts:
            return None
        delay = self._delay(attempts)
        if self.retry_expired(attempts, started, now):
            return None
        if failure is not None and self._handle_failure is not None and not self._handle_failure(failure):
            return None
        return delay
