"""Durable streams across real processes: a producer killed mid-stream, and a subscriber that reconnects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import Hub, unique_id

APP = Path(__file__).resolve().parent / "stream_worker_app.py"


def _worker_process(hub: Hub) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(APP), hub.address, hub.taskhub], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.mark.local_only("starts worker processes against the embedded emulator's address")
def test_a_producer_killed_mid_stream_is_followed_by_the_next_attempt(hub: Hub) -> None:
    c = hub.client()
    first = _worker_process(hub)
    second: subprocess.Popen[str] | None = None
    try:
        instance_id = c.schedule_new_orchestration("slow_agent", instance_id=unique_id("killed"))
        items = []
        for item in c.subscribe(instance_id, timeout=120):
            items.append(item)
            if second is None and item.topic == "tokens" and item.data == 3:
                first.kill()  # SIGKILL mid-activity: no chance to flush or to report
                first.wait(timeout=30)
                second = _worker_process(hub)
        state = c.get_orchestration_state(instance_id)
        assert state is not None and state.runtime_status.name == "COMPLETED"
    finally:
        _stop(first)
        if second is not None:
            _stop(second)
    assert [i.data for i in items if i.topic == "status"] == ["start", "done"]
    tokens = [(i.attempt, i.data) for i in items if i.topic == "tokens"]
    partial = [data for attempt, data in tokens if attempt == 1]
    retry = [data for attempt, data in tokens if attempt == 2]
    # The killed attempt's items up to the kill (at least 0..3) are kept, in order; the retry's follow, complete.
    assert partial == list(range(len(partial))) and len(partial) >= 4
    assert retry == list(range(20))
    assert tokens == [(1, d) for d in partial] + [(2, d) for d in retry]
    assert [i.id for i in items] == sorted(i.id for i in items)


def _follow(hub: Hub, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "durabletask.cli", *hub.cli_args(), "--json", "follow", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


@pytest.mark.local_only("starts worker processes against the embedded emulator's address")
def test_a_subscriber_process_killed_and_restarted_from_its_cursor_misses_nothing(hub: Hub) -> None:
    c = hub.client()
    producer = _worker_process(hub)
    try:
        instance_id = c.schedule_new_orchestration("slow_agent", instance_id=unique_id("reader"))
        reader = _follow(hub, instance_id, "--timeout", "120")
        assert reader.stdout is not None
        seen: list[dict[str, Any]] = [json.loads(reader.stdout.readline()) for _ in range(5)]
        reader.kill()
        reader.wait(timeout=30)
        reader.stdout.close()
        again = _follow(hub, instance_id, "--after", seen[-1]["id"], "--timeout", "120")
        out, _ = again.communicate(timeout=120)
        assert again.returncode == 0
        rest = [json.loads(line) for line in out.splitlines()]
    finally:
        _stop(producer)
    everything = list(c.subscribe(instance_id, timeout=60))
    assert [r["id"] for r in seen + rest] == [i.id for i in everything]
    assert [r["data"] for r in seen + rest if r["topic"] == "tokens"] == list(range(20))
