"""The stream's silence watchdog: fires only when armed for a whole timeout; costs the stream nothing per message."""

from __future__ import annotations

import sys
import threading
import time
from types import FrameType
from typing import Any

from durabletask._worker.stream import Watchdog

WAIT = 10.0


def test_fires_once_armed_for_the_timeout_and_not_while_messages_arrive() -> None:
    fired = threading.Event()
    watchdog = Watchdog(1.0, fired.set)
    try:
        for _ in range(30):  # a message every 0.02 s: never armed for the 1 s timeout
            watchdog.arm()
            time.sleep(0.02)
            watchdog.disarm()
        assert not fired.is_set() and not watchdog.fired
        watchdog.arm()
        assert fired.wait(WAIT)
        assert watchdog.fired
    finally:
        watchdog.close()


def test_a_closed_or_disarmed_watchdog_never_fires() -> None:
    fired = threading.Event()
    watchdog = Watchdog(0.1, fired.set)
    watchdog.arm()
    watchdog.disarm()
    time.sleep(0.3)
    watchdog.arm()
    watchdog.close()
    time.sleep(0.3)
    assert not fired.is_set()


def test_arming_and_disarming_do_not_wake_the_watch_thread() -> None:
    # The stream arms and disarms around every read; a wake-up of the watch thread each time was a thread
    # switch per work item. Count the watch loop's passes while the stream reads 200 messages.
    passes = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal passes
        if frame.f_code.co_name == "_watch" and event == "line":
            passes += 1
        return tracer if frame.f_code.co_name == "_watch" else None

    threading.settrace(tracer)
    try:
        watchdog = Watchdog(60.0, lambda: None)
    finally:
        threading.settrace(None)  # type: ignore[arg-type]
    try:
        time.sleep(0.1)
        before = passes
        for _ in range(200):
            watchdog.arm()
            time.sleep(0.001)  # lets the watch thread run if it was woken
            watchdog.disarm()
        time.sleep(0.1)
        assert passes - before < 20, passes - before
    finally:
        watchdog.close()
    assert sys.gettrace() is None
