"""Retry and channel-health decisions, with a controllable clock and random source."""

from __future__ import annotations

import grpc
import pytest

from durabletask._client import requests as rq
from durabletask._client.resilience import ChannelHealth, RetryPlan
from durabletask._grpc.errors import NotFoundError, UnavailableError
from durabletask._grpc.resiliency import is_transport_failure
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.grpc_options import GrpcClientResiliencyOptions, GrpcRetryPolicyOptions

READ = rq.RpcRequest("GetInstance", pb.GetInstanceRequest())
WRITE = rq.RpcRequest("RaiseEvent", pb.RaiseEventRequest())


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_transport_failures() -> None:
    assert is_transport_failure("GetInstance", grpc.StatusCode.UNAVAILABLE)
    assert is_transport_failure("GetInstance", grpc.StatusCode.DEADLINE_EXCEEDED)
    # A wait running out is the caller's timeout, not a broken connection.
    assert not is_transport_failure("WaitForInstanceCompletion", grpc.StatusCode.DEADLINE_EXCEEDED)
    assert not is_transport_failure("GetInstance", grpc.StatusCode.NOT_FOUND)


def test_health_rebuilds_after_the_threshold_and_respects_the_interval() -> None:
    clock = Clock()
    health = ChannelHealth(
        GrpcClientResiliencyOptions(channel_recreate_failure_threshold=2, min_recreate_interval_seconds=30), clock
    )
    unavailable = grpc.StatusCode.UNAVAILABLE
    assert [health.record_failure("GetInstance", unavailable) for _ in range(2)] == [False, True]
    # Within the interval another burst does not rebuild again ...
    assert [health.record_failure("GetInstance", unavailable) for _ in range(3)] == [False, False, False]
    clock.now += 31
    # ... and afterwards it does.
    assert health.record_failure("GetInstance", unavailable)


def test_success_or_an_application_error_resets_the_count() -> None:
    health = ChannelHealth(GrpcClientResiliencyOptions(channel_recreate_failure_threshold=2), Clock())
    health.record_failure("GetInstance", grpc.StatusCode.UNAVAILABLE)
    health.record_success()
    assert not health.record_failure("GetInstance", grpc.StatusCode.UNAVAILABLE)
    assert not health.record_failure("GetInstance", grpc.StatusCode.NOT_FOUND)
    assert not health.record_failure("GetInstance", grpc.StatusCode.UNAVAILABLE)


def test_threshold_zero_never_rebuilds() -> None:
    health = ChannelHealth(GrpcClientResiliencyOptions(channel_recreate_failure_threshold=0), Clock())
    assert not any(health.record_failure("GetInstance", grpc.StatusCode.UNAVAILABLE) for _ in range(10))


def test_retry_backoff_grows_and_is_capped() -> None:
    plan = RetryPlan(
        GrpcRetryPolicyOptions(max_attempts=5, initial_backoff_seconds=0.1, max_backoff_seconds=0.3), rng=lambda: 1.0
    )
    delays = [plan.delay(READ, UnavailableError(), attempt, None) for attempt in range(1, 6)]
    assert delays == [pytest.approx(0.1), pytest.approx(0.2), pytest.approx(0.3), pytest.approx(0.3), None]


def test_a_wait_with_a_timeout_retries_past_max_attempts_until_its_deadline() -> None:
    plan = RetryPlan(GrpcRetryPolicyOptions(max_attempts=2, max_backoff_seconds=0.25), rng=lambda: 1.0)
    wait = rq.RpcRequest("WaitForInstanceCompletion", pb.GetInstanceRequest(), timeout=60)
    assert plan.delay(wait, UnavailableError(), 10, remaining=30) == pytest.approx(0.25)
    assert plan.delay(wait, UnavailableError(), 5000, remaining=30) == pytest.approx(0.25)  # no float overflow
    assert plan.delay(wait, UnavailableError(), 10, remaining=0.2) is None  # the caller's timeout comes first
    assert plan.delay(wait, UnavailableError(), 2, remaining=None) is None  # no timeout: max_attempts holds
    assert plan.delay(READ, UnavailableError(), 2, remaining=30) is None


def test_retry_only_reads_only_listed_codes_and_within_the_deadline() -> None:
    plan = RetryPlan(GrpcRetryPolicyOptions(), rng=lambda: 0.5)
    assert plan.delay(WRITE, UnavailableError(), 1, None) is None
    assert plan.delay(READ, NotFoundError(), 1, None) is None
    assert plan.delay(READ, UnavailableError(), 1, remaining=0.001) is None
    assert plan.delay(READ, UnavailableError(), 1, remaining=10) == pytest.approx(0.025)
    assert RetryPlan(None).delay(READ, UnavailableError(), 1, None) is None
