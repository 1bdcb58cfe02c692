"""The completion sender: retries through an outage within its bound, never starts an RPC once closed."""

from __future__ import annotations

import logging
import threading
from typing import Any

import grpc
import pytest

from durabletask._worker.completions import CompletionSender


def test_close_waits_for_in_flight_sends_and_refuses_later_ones() -> None:
    sender = CompletionSender(logging.getLogger("test"))
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow_call() -> None:
        started.set()
        release.wait(5)
        calls.append("slow")

    results: list[bool] = []
    t = threading.Thread(target=lambda: results.append(sender.send("slow completion", slow_call)))
    t.start()
    assert started.wait(5)
    assert sender.close(timeout=0.05) is False  # still in flight
    release.set()
    t.join(5)
    assert sender.close(timeout=5) is True and results == [True] and calls == ["slow"]

    # After closing, a late completion is dropped without touching the (about to be closed) channel.
    assert sender.send("late completion", lambda: calls.append("late")) is False
    assert calls == ["slow"]


class _Refused(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


def test_a_completion_over_a_limit_is_reported_once_and_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[int] = []

    def refused() -> None:
        attempts.append(1)
        raise _Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, "orchestrator response exceeds the 4 MiB limit")

    sender = CompletionSender(logging.getLogger("test"), retry_base=0, retry_cap=0)
    with caplog.at_level(logging.INFO, logger="test"):
        assert sender.send("the orchestration result for 'big'", refused) is False
    assert attempts == [1]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and not any(r.getMessage().startswith("retrying") for r in caplog.records)
    assert "'big'" in errors[0].getMessage() and "RESOURCE_EXHAUSTED" in errors[0].getMessage()


class _Clock:
    """A clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Waits(threading.Event):
    """A stopping flag that records the waits between attempts instead of sleeping through them."""

    def __init__(self, clock: _Clock, stop_after: int | None = None) -> None:
        super().__init__()
        self.clock, self.stop_after = clock, stop_after
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0.0))
        self.clock.now += timeout or 0.0
        if self.stop_after is not None and len(self.waits) >= self.stop_after:
            self.set()
        return self.is_set()


def _down_for(clock: _Clock, seconds: float, then: BaseException | None = None) -> tuple[list[float], Any]:
    """Fails with UNAVAILABLE until ``seconds`` have passed on ``clock``, then raises ``then`` or succeeds."""
    attempts: list[float] = []

    def call() -> None:
        attempts.append(clock.now)
        if clock.now < seconds:
            raise _Refused(grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses")
        if then is not None:
            raise then

    return attempts, call


def test_a_result_outlasts_an_outage_shorter_than_the_bound(caplog: pytest.LogCaptureFixture) -> None:
    # The old sender gave up after three attempts, about 1.5 s: the work item then ran again elsewhere.
    clock = _Clock()
    waits = _Waits(clock)
    attempts, call = _down_for(clock, 20.0)
    sender = CompletionSender(logging.getLogger("test"), stopping=waits, retry_for=60, clock=clock)
    with caplog.at_level(logging.INFO, logger="test"):
        assert sender.send("the result of activity 'a#1' for 'i'", call) is True
    assert attempts[-1] >= 20.0 and len(attempts) > 3
    # Exponential backoff with full jitter: each wait at most base * 2**n, capped.
    assert all(0 <= w <= min(2.0, 0.1 * 2**n) for n, w in enumerate(waits.waits))
    assert len(set(waits.waits)) > 1
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert sum(m.startswith("retrying") for m in infos) == 1  # one line for the outage, not one per attempt
    assert any(m.startswith("delivered the result of activity 'a#1' for 'i' after") for m in infos)


def test_a_result_is_given_up_once_the_bound_has_passed(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    attempts, call = _down_for(clock, 1e9)
    sender = CompletionSender(logging.getLogger("test"), stopping=_Waits(clock), retry_for=30, clock=clock)
    with caplog.at_level(logging.INFO, logger="test"):
        assert sender.send("the result", call) is False
    assert 30.0 <= attempts[-1] <= 30.0 + 1e-6  # the last wait is cut to the bound
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "unreachable for 30.0s" in errors[0]


def test_a_lease_lost_during_the_outage_ends_the_retries_at_once() -> None:
    clock = _Clock()
    lost = _Refused(grpc.StatusCode.FAILED_PRECONDITION, "the completion token is stale")
    attempts, call = _down_for(clock, 5.0, then=lost)
    sender = CompletionSender(logging.getLogger("test"), stopping=_Waits(clock), clock=clock)
    assert sender.send("the result", call) is False
    assert attempts[-1] >= 5.0
    assert len([a for a in attempts if a >= 5.0]) == 1


def test_a_stopping_worker_ends_the_retries(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    attempts, call = _down_for(clock, 1e9)
    sender = CompletionSender(logging.getLogger("test"), stopping=_Waits(clock, stop_after=3), clock=clock)
    with caplog.at_level(logging.INFO, logger="test"):
        assert sender.send("the result", call) is False
    assert len(attempts) == 3
    assert any("the worker stopped while retrying it" in r.getMessage() for r in caplog.records)


def test_bad_retry_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="retry_for"):
        CompletionSender(logging.getLogger("test"), retry_for=-1)
    with pytest.raises(ValueError, match="retry_base <= retry_cap"):
        CompletionSender(logging.getLogger("test"), retry_base=3, retry_cap=1)


def test_results_waiting_for_the_backend_are_counted_until_they_go_out() -> None:
    sender = CompletionSender(logging.getLogger("test"), retry_base=0.01, retry_cap=0.01)
    up = threading.Event()
    entered = threading.Event()

    def call() -> None:
        entered.set()
        if not up.is_set():
            raise _Refused(grpc.StatusCode.UNAVAILABLE, "down")

    results: list[bool] = []
    t = threading.Thread(target=lambda: results.append(sender.send("the result", call)))
    t.start()
    assert entered.wait(5)
    while not sender.retrying:  # it fails once before it counts as waiting
        entered.clear()
        assert entered.wait(5)
    never = threading.Event()
    waiter = threading.Thread(target=sender.wait_delivered, args=(never,))
    waiter.start()
    assert waiter.is_alive()
    up.set()
    waiter.join(5)
    t.join(5)
    assert not waiter.is_alive() and results == [True] and sender.retrying == 0


def test_waiting_for_results_ends_when_the_worker_stops() -> None:
    stop = threading.Event()
    sender = CompletionSender(logging.getLogger("test"), retry_base=0.01, retry_cap=0.01, stopping=stop)

    def down() -> None:
        raise _Refused(grpc.StatusCode.UNAVAILABLE, "down")

    t = threading.Thread(target=sender.send, args=("the result", down))
    t.start()
    while not sender.retrying:
        t.join(0.01)
    halted = threading.Event()
    halted.set()
    sender.wait_delivered(halted)  # returns at once for a loop that is stopping
    stop.set()
    t.join(5)
    assert not t.is_alive() and sender.retrying == 0
