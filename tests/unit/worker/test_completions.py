"""The completion sender never starts an RPC once closed, and closing waits for sends in flight."""

from __future__ import annotations

import logging
import threading

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
