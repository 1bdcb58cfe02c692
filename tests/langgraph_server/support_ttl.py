"""What the thread TTL tests share: an emulator whose clock the test moves (TTLs count in minutes), a task hub per
test, and waits on a thread's record."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
import pytest

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.extensions.langgraph._server.threads_records import Records
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
    hub = RunsHub(f"localhost:{clocked_emulator.port}", f"t{uuid.uuid4().hex[:12]}")
    yield hub
    with grpc.insecure_channel(hub.address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.DeleteTaskHub(pb.DeleteTaskHubRequest(), metadata=hub.metadata, timeout=60)


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
