"""A scheduler worker and clients configured by one connection string run an orchestration on the emulator.

The emulator routes by the ``taskhub`` header, so this proves the scheduler interceptors reach it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask.azuremanaged.client import AsyncDurableTaskSchedulerClient, DurableTaskSchedulerClient
from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker


@pytest.fixture(scope="module")
def emulator() -> Iterator[EmulatorServer]:
    server = EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True)
    server.start()
    yield server
    server.stop()


def greet(ctx: Any, name: str) -> str:
    return f"hello {name}"


def greeting(ctx: Any, name: str) -> Any:
    return (yield ctx.call_activity(greet, input=name))


def test_orchestration_runs_through_the_scheduler_classes(emulator: EmulatorServer) -> None:
    connection = f"Endpoint=http://localhost:{emulator.port};TaskHub=h{uuid.uuid4().hex[:10]};Authentication=None"
    worker = DurableTaskSchedulerWorker.from_connection_string(connection)
    worker.add_orchestrator(greeting)
    worker.add_activity(greet)
    worker.start()
    client = DurableTaskSchedulerClient.from_connection_string(connection)
    try:
        instance_id = client.schedule_new_orchestration(greeting, input="dts")
        state = client.wait_for_orchestration_completion(instance_id, timeout=30)
    finally:
        client.close()
        worker.stop()
    assert state is not None
    assert state.serialized_output == '"hello dts"'

    # A client for another task hub does not see the instance: the header selected the hub.
    other = DurableTaskSchedulerClient.from_connection_string(
        f"Endpoint=http://localhost:{emulator.port};TaskHub=other{uuid.uuid4().hex[:6]};Authentication=None"
    )
    try:
        assert other.get_orchestration_state(instance_id) is None
    finally:
        other.close()


async def test_async_client_reads_the_same_hub(emulator: EmulatorServer) -> None:
    taskhub = f"h{uuid.uuid4().hex[:10]}"
    connection = f"Endpoint=http://localhost:{emulator.port};TaskHub={taskhub};Authentication=None"
    worker = DurableTaskSchedulerWorker.from_connection_string(connection)
    worker.add_orchestrator(greeting)
    worker.add_activity(greet)
    worker.start()
    client = AsyncDurableTaskSchedulerClient.from_connection_string(connection)
    try:
        instance_id = await client.schedule_new_orchestration(greeting, input="async")
        state = await client.wait_for_orchestration_completion(instance_id, timeout=30)
    finally:
        await client.close()
        worker.stop()
    assert state is not None
    assert state.serialized_output == '"hello async"'
