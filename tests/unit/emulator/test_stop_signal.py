"""The emulator's wait for SIGTERM/SIGINT: the handler takes no lock, so a signal can land anywhere."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dtscale_emulator.ops.stop_signal import StopSignal

ROOT = Path(__file__).resolve().parents[3]


def test_wait_returns_the_signal_received_and_close_restores_the_handlers() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with StopSignal((signal.SIGTERM,)) as stop:
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
        assert stop.wait() is signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_that_arrives_before_wait_is_not_lost() -> None:
    with StopSignal((signal.SIGUSR1,)) as stop:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert stop.wait() is signal.SIGUSR1


# Python runs a handler in the main thread between any two bytecodes, so it may run while that thread holds a
# lock. The scripts call the handler by hand inside such a lock, exactly where Python would run it.
_OURS_INSIDE_A_LOCK = """
import signal, sys, threading
sys.path.insert(0, sys.argv[1])
from dtscale_emulator.ops.stop_signal import StopSignal
stop = StopSignal((signal.SIGTERM,))
handler = signal.getsignal(signal.SIGTERM)
with threading.Lock():
    handler(signal.SIGTERM, None)
print(stop.wait().name)
"""

# What the emulator did before: Event.set from the handler, landing inside Event.wait's condition lock.
_EVENT_INSIDE_ITS_LOCK = """
import threading
stopped = threading.Event()
with stopped._cond:
    stopped.set()
"""


def test_the_handler_completes_while_the_main_thread_holds_a_lock() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _OURS_INSIDE_A_LOCK, str(ROOT)], capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "SIGTERM", out.stderr


def test_an_event_set_from_a_handler_can_deadlock_which_is_why_the_handler_only_writes_a_pipe() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", _EVENT_INSIDE_ITS_LOCK], capture_output=True, timeout=3)
