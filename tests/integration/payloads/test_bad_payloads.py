"""Every way a stored payload can go wrong ends in an error naming the instance and the field, on a real Azurite:
over ``max_stored_payload_bytes`` on the worker's side, a store that cannot be reached when reading, a corrupt
or foreign token in the service's data; never a missing value passed on as ``None``."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import pytest

from durabletask import client, task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask.payload import PayloadStoreError
from tests.support.azurite import Azurite

from .conftest import Side

BIG = 300 * 1024
LIMIT = 2 * 1024 * 1024


def huge(ctx: task.ActivityContext, size: int) -> str:
    return "h" * size


def calls_huge(ctx: task.OrchestrationContext, size: int) -> Any:
    value = yield ctx.call_activity(huge, input=size)
    return len(value)


def returns_huge(ctx: task.OrchestrationContext, size: int) -> Any:
    return "r" * size


def measure(ctx: task.OrchestrationContext, value: Any) -> Any:
    return len(value) if value is not None else "got None"


def dead_store(container: str = "durabletask-payloads") -> Any:
    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

    return BlobPayloadStore(
        BlobPayloadStoreOptions(
            connection_string="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=AAAA;"
            "BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;",
            container_name=container,
            retry_total=0,
        )
    )


def test_an_activity_result_over_the_stored_limit_fails_the_activity_naming_instance_and_field(
    blob_side: Side,
) -> None:
    assert blob_side.store is not None
    blob_side.store.options.max_stored_payload_bytes = LIMIT
    blob_side.worker(calls_huge, activities=(huge,))
    c = blob_side.client()
    iid = c.schedule_new_orchestration(calls_huge, input=LIMIT + 10)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED, state
    assert state.failure_details is not None
    message = state.failure_details.message
    assert "result" in message and str(LIMIT) in message, message
    assert iid in message, message


def test_an_orchestration_output_over_the_stored_limit_fails_it_naming_instance_and_field(blob_side: Side) -> None:
    assert blob_side.store is not None
    blob_side.store.options.max_stored_payload_bytes = LIMIT
    blob_side.worker(returns_huge)
    c = blob_side.client()
    iid = c.schedule_new_orchestration(returns_huge, input=LIMIT + 10)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED, state
    assert state.failure_details is not None
    message = state.failure_details.message
    assert "output" in message and str(LIMIT) in message and iid in message, message


def test_reading_through_an_unreachable_store_names_instance_and_field(blob_side: Side) -> None:
    iid = blob_side.client().schedule_new_orchestration("nobody-runs-this", input="u" * BIG)
    container = blob_side.store.options.container_name  # type: ignore[union-attr]
    sync_store = dead_store(container)
    with pytest.raises(
        PayloadStoreError, match=rf"cannot fetch the orchestrationState.input of instance '{iid}'"
    ) as caught:
        blob_side.client(store=sync_store).get_orchestration_state(iid)
    sync_store.close()
    assert caught.value.instance_id == iid and caught.value.field == "orchestrationState.input"

    async def read() -> None:
        store = dead_store(container)
        c = client.AsyncTaskHubGrpcClient(
            host_address=blob_side.address, metadata=blob_side.metadata, payload_store=store
        )
        try:
            await c.get_orchestration_state(iid)
        finally:
            await c.close()
            await store.close_async()
            store.close()

    with pytest.raises(PayloadStoreError, match=rf"cannot fetch the orchestrationState.input of instance '{iid}'"):
        asyncio.run(read())


def start_raw(side: Side, instance_id: str, raw_input: str) -> None:
    """Start an instance whose stored input is ``raw_input`` as is (what another program may have written)."""
    with grpc.insecure_channel(side.address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        request = pb.CreateInstanceRequest(instanceId=instance_id, name="measure")
        request.input.value = raw_input
        stub.StartInstance(request, metadata=side.metadata, timeout=10)


@pytest.mark.parametrize(
    "raw",
    ["blob:v1:no-blob-name", "blob:v1::x", "blob:v1:unknown-container:someone/0123", "blob:v2:c:n"],
    ids=["corrupt", "no-container", "foreign-container", "other-version"],
)
def test_a_corrupt_or_foreign_token_is_an_error_for_client_and_worker(
    blob_side: Side, azurite: Azurite, raw: str
) -> None:
    iid = f"bad-{uuid.uuid4().hex[:8]}"
    start_raw(blob_side, iid, raw)
    c = blob_side.client()
    with pytest.raises(PayloadStoreError) as caught:
        c.get_orchestration_state(iid)
    assert caught.value.instance_id == iid and "input" in caught.value.field
    assert iid in str(caught.value) and raw in str(caught.value)

    blob_side.worker(measure)
    state = c.wait_for_orchestration_completion(iid, timeout=30, fetch_payloads=False)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED, state
    assert state.failure_details is not None
    assert f"executionStarted.input of instance '{iid}'" in state.failure_details.message, state.failure_details
