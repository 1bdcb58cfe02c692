"""The stream's silence watchdog: fires only when armed for a whole timeout; costs the stream nothing per message;
the stream arms it for every read and replaces a stream it finds silent."""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest
from conftest import WorkerFactory
from worker_fakes import Server, activity_item, health_ping

from durabletask._worker import stream as stream_module
from durabletask._worker.stream import Watchdog
from durabletask.grpc_options import GrpcWorkerResiliencyOptions

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


def double(ctx: object, value: int) -> int:
    return value * 2


SILENCE = GrpcWorkerResiliencyOptions(
    hello_timeout_seconds=5,
    silent_disconnect_timeout_seconds=1.0,
    reconnect_backoff_base_seconds=0.01,
    reconnect_backoff_cap_seconds=0.05,
)


class HeldWatchdog:
    """Stands in for a stream's watchdog: counts the stream's armings and fires only when the test says."""

    def __init__(self, timeout: float, on_silence: Callable[[], None]) -> None:
        self.timeout = timeout
        self._on_silence = on_silence
        self.fired = False
        self._armings = 0
        self._changed = threading.Condition()

    def arm(self) -> None:
        with self._changed:
            self._armings += 1
            self._changed.notify_all()

    def disarm(self) -> None:
        return None

    def close(self) -> None:
        return None

    def wait_armed(self, count: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self._armings >= count, WAIT), f"armed {self._armings} times"

    def fire(self) -> None:
        self.fired = True
        self._on_silence()


@pytest.fixture
def held_watchdogs(monkeypatch: pytest.MonkeyPatch) -> queue.Queue[HeldWatchdog]:
    """Every watchdog the worker's streams make from now on, in order; none fires on its own."""
    made: queue.Queue[HeldWatchdog] = queue.Queue()

    def make(timeout: float, on_silence: Callable[[], None]) -> HeldWatchdog:
        watchdog = HeldWatchdog(timeout, on_silence)
        made.put(watchdog)
        return watchdog

    monkeypatch.setattr(stream_module, "Watchdog", make)
    return made


def test_health_pings_keep_the_stream_and_its_watchdog_replaces_it_once_silent(
    server: Server, make_worker: WorkerFactory, held_watchdogs: queue.Queue[HeldWatchdog]
) -> None:
    worker = make_worker(resiliency_options=SILENCE)
    worker.add_activity(double)
    worker.start()
    first = server.sidecar.next_stream()
    watchdog = held_watchdogs.get(timeout=WAIT)
    assert watchdog.timeout == 1.0
    watchdog.wait_armed(1)  # waiting for the first message
    # Health pings count as life: after each one the stream reads on, its silence measured afresh.
    for armings in (2, 3, 4):
        first.send(health_ping())
        watchdog.wait_armed(armings)
    assert server.sidecar.streams.empty() and held_watchdogs.empty()  # still the first stream
    watchdog.fire()
    second = server.sidecar.next_stream()
    assert first.closed.wait(WAIT)  # the worker cancelled the silent call
    second.send(activity_item("double", "5"))
    assert json.loads(server.sidecar.next_completion()[1].result.value) == 10


def test_a_silent_stream_is_replaced_once_its_timeout_has_passed(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker(resiliency_options=SILENCE)
    worker.add_activity(double)
    started = time.monotonic()  # before the stream exists, so before its watchdog is first armed
    worker.start()
    first = server.sidecar.next_stream()
    second = server.sidecar.next_stream()
    assert time.monotonic() - started >= 1.0  # the whole timeout of silence, never less
    assert first.closed.wait(WAIT)
    second.send(activity_item("double", "5"))
    assert json.loads(server.sidecar.next_completion()[1].result.value) == 10
