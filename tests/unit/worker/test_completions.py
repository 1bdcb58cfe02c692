"""The completion sender never starts an RPC once closed, and closing waits for sends in flight."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

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

    sender = CompletionSender(logging.getLogger("test"), retry_delay=0, attempts=5)
    with caplog.at_level(logging.INFO, logger="test"):
        assert sender.send("the orchestration result for 'big'", refused) is False
    assert attempts == [1]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and not any(r.getMessage().startswith("retrying") for r in caplog.records)
    assert "'big'" in errors[0].getMessage() and "RESOURCE_EXHAUSTED" in errors[0].getMessage()


# --- completions sent without waiting (orchestration turns run on the stream's thread) -------------------------
def _sends(*outcomes: BaseException | None) -> tuple[list[Future[object]], Callable[[], Future[object]]]:
    """A ``start`` whose successive calls return futures settled with ``outcomes`` (None: delivered)."""
    started: list[Future[object]] = []
    pending = list(outcomes)

    def start() -> Future[object]:
        future: Future[object] = Future()
        started.append(future)
        outcome = pending.pop(0)
        if outcome is None:
            future.set_result(object())
        else:
            future.set_exception(outcome)
        return future

    return started, start


def test_an_unwaited_send_calls_finished_once_it_is_delivered() -> None:
    sender = CompletionSender(logging.getLogger("test"))
    finished = threading.Event()
    gate: Future[object] = Future()
    sender.send_async("a result", lambda: gate, finished.set)
    assert not finished.is_set()
    assert sender.close(timeout=0.05) is False  # closing waits for it, as for a waited send
    gate.set_result(object())
    assert finished.is_set()
    assert sender.close(timeout=5) is True


def test_an_unwaited_send_is_retried_on_unavailable_on_a_thread_of_its_own(caplog: pytest.LogCaptureFixture) -> None:
    sender = CompletionSender(logging.getLogger("test"), retry_delay=0.01, attempts=3)
    started, start = _sends(_Refused(grpc.StatusCode.UNAVAILABLE, "restarting"), None)
    finished = threading.Event()
    with caplog.at_level(logging.INFO, logger="test"):
        sender.send_async("the orchestration result for 'o'", start, finished.set)
        assert finished.wait(5)
    assert len(started) == 2
    assert any(r.getMessage().startswith("retrying the orchestration result for 'o'") for r in caplog.records)
    assert sender.close(timeout=5) is True


@pytest.mark.parametrize(
    ("code", "level", "words"),
    [
        (grpc.StatusCode.NOT_FOUND, logging.WARNING, "no longer leased"),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, logging.ERROR, "over one of its limits"),
        (grpc.StatusCode.INVALID_ARGUMENT, logging.ERROR, "could not deliver"),
    ],
)
def test_an_unwaited_send_the_backend_refuses_for_good_is_given_up_at_once(
    caplog: pytest.LogCaptureFixture, code: grpc.StatusCode, level: int, words: str
) -> None:
    sender = CompletionSender(logging.getLogger("test"), retry_delay=0, attempts=5)
    started, start = _sends(_Refused(code, "no"))
    finished: list[int] = []
    with caplog.at_level(logging.INFO, logger="test"):
        sender.send_async("the orchestration result for 'o'", start, lambda: finished.append(1))
    assert len(started) == 1 and finished == [1]
    assert [r.levelno for r in caplog.records if words in r.getMessage()] == [level]
    assert sender.close(timeout=0) is True


def test_an_unwaited_send_gives_up_when_the_worker_stops_during_its_retry_delay() -> None:
    stopping = threading.Event()
    sender = CompletionSender(logging.getLogger("test"), stopping=stopping, retry_delay=30, attempts=3)
    started, start = _sends(_Refused(grpc.StatusCode.UNAVAILABLE, "restarting"), None)
    finished = threading.Event()
    sender.send_async("a result", start, finished.set)
    assert not finished.wait(0.05)  # waiting out its retry delay
    stopping.set()
    assert finished.wait(5)
    assert len(started) == 1  # no second attempt on a channel about to close


def test_an_unwaited_send_that_cannot_start_or_comes_after_close_still_finishes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sender = CompletionSender(logging.getLogger("test"))
    finished: list[str] = []

    def broken() -> Future[object]:
        raise ValueError("Cannot invoke RPC on closed channel!")

    with caplog.at_level(logging.INFO, logger="test"):
        sender.send_async("a result", broken, lambda: finished.append("broken"))
        assert sender.close(timeout=5) is True
        sender.send_async("a late result", broken, lambda: finished.append("late"))
    assert finished == ["broken", "late"]
    messages = [r.getMessage() for r in caplog.records]
    assert "could not deliver a result" in messages
    assert "could not deliver a late result: the worker has stopped" in messages
