"""The completion sender never starts an RPC once closed, and closing waits for sends in flight."""

from __future__ import annotations

import logging
import threading

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
