"""What the thread TTL tests share: an emulator whose clock the test moves (TTLs count in minutes), a task hub per
test, and waits on a thread's record."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from durabletask.extensions.langgraph._server.threads_records import Records
from tests.langgraph_server.support_hosting import fresh_hub
from tests.langgraph_server.support_runs import RunsHub


@pytest.fixture
def clocked_emulator() -> Iterator[Any]:
    """An emulator of the test's own on a manual clock that starts now (the servers' and workers' clocks are the wall
    clock, so each test starts level with it): its timers and delayed signals fire only when it moves."""
    from dtscale_emulator import ManualClock
    from dtscale_emulator.server import EmulatorServer

    clock = ManualClock(datetime.now(timezone.utc))
    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True, clock=clock)
    server.start()
    server.test_clock = clock
    yield server
    server.stop()


@pytest.fixture
def clocked_hub(clocked_emulator: Any) -> Iterator[RunsHub]:
    yield from fresh_hub(clocked_emulator, "t")


def advance(emulator: Any, minutes: float) -> None:
    """Move the emulator's clock on: the TTL checks due by then arrive."""
    emulator.test_clock.advance(timedelta(minutes=minutes))


async def record_when(records: Records, thread_id: str, ready: Any, timeout: float = 60) -> dict[str, Any] | None:
    """The thread's record (``None``: gone) once ``ready(record)`` holds."""
    async with asyncio.timeout(timeout):
        while True:
            found = await records.read(thread_id)
            if ready(found):
                return found
            await asyncio.sleep(0.05)
