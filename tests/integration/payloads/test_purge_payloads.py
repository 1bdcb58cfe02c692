"""Purging with ``delete_payloads_on_purge`` deletes the blobs of every purged instance, on a real Azurite:
recursive purges reach the sub-orchestrations' blobs, filter purges the blobs of each instance they removed,
and nothing an instance that still exists may read is deleted."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from durabletask import client, task
from tests.support.azurite import Azurite

from .conftest import Side

BIG = 300 * 1024  # over the 256 KiB threshold


def shout(ctx: task.ActivityContext, value: str) -> str:
    return value.upper()


def child(ctx: task.OrchestrationContext, value: str) -> Any:
    louder = yield ctx.call_activity(shout, input=value)
    return louder + "!"


def parent(ctx: task.OrchestrationContext, value: str) -> Any:
    result = yield ctx.call_sub_orchestrator(child, input=value)
    return len(result)


def parent_then_waits(ctx: task.OrchestrationContext, value: str) -> Any:
    result = yield ctx.call_sub_orchestrator(child, input=value)
    yield ctx.wait_for_external_event("go")
    return len(result)


def holds(ctx: task.OrchestrationContext, value: str) -> Any:
    yield ctx.wait_for_external_event("go")
    return len(value)


def _store(azurite: Azurite, container: str, delete: bool = True) -> Any:
    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

    return BlobPayloadStore(
        BlobPayloadStoreOptions(
            connection_string=azurite.connection_string, container_name=container, delete_payloads_on_purge=delete
        )
    )


@pytest.fixture
def purging_side(emulator_port: int, azurite: Azurite) -> Iterator[Side]:
    store = _store(azurite, f"c{uuid.uuid4().hex}")
    with ExitStack() as stack:
        stack.callback(store.close)
        yield Side(emulator_port, store, stack)


def owners(side: Side) -> set[str]:
    """The instances that have blobs in the side's container."""
    store: Any = side.store
    container = store._sync.get_container_client(store.options.container_name)
    return {blob.name.split("/")[0] for blob in container.list_blobs()}


def run_parent(side: Side, c: client.TaskHubGrpcClient) -> tuple[str, str]:
    iid = c.schedule_new_orchestration(parent, input="p" * BIG)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    [child_id] = owners(side) - {iid}
    return iid, child_id


def test_a_recursive_purge_deletes_the_sub_orchestrations_blobs_too(purging_side: Side) -> None:
    purging_side.worker(parent, child, activities=(shout,))
    c = purging_side.client()
    iid, child_id = run_parent(purging_side, c)
    assert owners(purging_side) == {iid, child_id}
    assert c.purge_orchestration(iid, recursive=True).deleted_instance_count == 2
    assert owners(purging_side) == set()


def test_a_purge_without_recursion_keeps_the_sub_orchestration_and_its_blobs(purging_side: Side) -> None:
    purging_side.worker(parent, child, activities=(shout,))
    c = purging_side.client()
    iid, child_id = run_parent(purging_side, c)
    assert c.purge_orchestration(iid, recursive=False).deleted_instance_count == 1
    assert owners(purging_side) == {child_id}
    assert c.get_orchestration_state(child_id) is not None


def test_a_filter_purge_deletes_the_blobs_of_what_it_purged_only(purging_side: Side) -> None:
    purging_side.worker(parent, child, holds, activities=(shout,))
    c = purging_side.client()
    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    run_parent(purging_side, c)
    running = c.schedule_new_orchestration(holds, input="r" * BIG)
    c.wait_for_orchestration_start(running, timeout=30)
    result = c.purge_orchestrations_by(created_time_from=since, runtime_status=[client.OrchestrationStatus.COMPLETED])
    assert result.deleted_instance_count == 2
    assert owners(purging_side) == {running}
    # The instance still running reads its input from its blob as before.
    c.raise_orchestration_event(running, "go")
    state = c.wait_for_orchestration_completion(running, timeout=30)
    assert state is not None and json.loads(state.serialized_output or "") == BIG


def test_a_filter_purge_with_recursion_reaches_the_sub_orchestrations(purging_side: Side) -> None:
    purging_side.worker(parent, child, activities=(shout,))
    c = purging_side.client()
    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    run_parent(purging_side, c)
    # Only the parent matches the filter by creation time: the child started after it.
    result = c.purge_orchestrations_by(created_time_from=since, recursive=True)
    assert result.deleted_instance_count == 2
    assert owners(purging_side) == set()


def test_a_purged_sub_orchestration_keeps_its_blobs_while_its_parent_reads_them(purging_side: Side) -> None:
    purging_side.worker(parent_then_waits, child, activities=(shout,))
    c = purging_side.client()
    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    iid = c.schedule_new_orchestration(parent_then_waits, input="w" * BIG)
    for _ in range(300):
        children = owners(purging_side) - {iid}
        if children and c.get_orchestration_state(next(iter(children))).runtime_status.name == "COMPLETED":  # type: ignore[union-attr]
            break
        asyncio.run(asyncio.sleep(0.1))
    [child_id] = owners(purging_side) - {iid}
    result = c.purge_orchestrations_by(created_time_from=since, runtime_status=[client.OrchestrationStatus.COMPLETED])
    assert result.deleted_instance_count == 1 and c.get_orchestration_state(child_id) is None
    assert owners(purging_side) == {iid, child_id}  # the parent's history still holds the child's result token
    c.raise_orchestration_event(iid, "go")
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output or "") == BIG + 1


def test_the_async_client_deletes_the_blobs_of_a_recursive_purge(purging_side: Side, azurite: Azurite) -> None:
    purging_side.worker(parent, child, activities=(shout,))
    iid, _ = run_parent(purging_side, purging_side.client())
    container = purging_side.store.options.container_name  # type: ignore[union-attr]

    async def purge() -> int:
        async_store = _store(azurite, container)
        c = client.AsyncTaskHubGrpcClient(
            host_address=purging_side.address, metadata=purging_side.metadata, payload_store=async_store
        )
        try:
            return (await c.purge_orchestration(iid)).deleted_instance_count
        finally:
            await c.close()
            await async_store.close_async()
            async_store.close()

    assert asyncio.run(purge()) == 2
    assert owners(purging_side) == set()


def test_without_the_opt_in_a_filter_purge_keeps_every_blob(emulator_port: int, azurite: Azurite) -> None:
    store = _store(azurite, f"c{uuid.uuid4().hex}", delete=False)
    with ExitStack() as stack:
        stack.callback(store.close)
        side = Side(emulator_port, store, stack)
        side.worker(parent, child, activities=(shout,))
        c = side.client()
        since = datetime.now(timezone.utc) - timedelta(seconds=1)
        iid, child_id = run_parent(side, c)
        assert c.purge_orchestrations_by(created_time_from=since, recursive=True).deleted_instance_count == 2
        assert owners(side) == {iid, child_id}
