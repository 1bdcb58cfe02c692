"""Every payload kind crosses the wire through Azure Blob Storage (a real Azurite) and comes back whole."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from durabletask import client, entities, task
from durabletask.payload import PayloadStoreError
from durabletask.task import PayloadTooLargeError

from .conftest import Side

BIG = 300 * 1024  # over the 256 KiB threshold
HUGE = 3 * 1024 * 1024  # over the service's 1 MiB limit


def text(size: int, seed: str = "x") -> str:
    return (seed * (size // len(seed) + 1))[:size]


def is_token(raw: str | None) -> bool:
    return raw is not None and raw.startswith("blob:v1:")


def echo(ctx: task.ActivityContext, value: str) -> str:
    return value + "!"


def child(ctx: task.OrchestrationContext, value: str) -> Any:
    return value.upper()


def counter(ctx: entities.EntityContext, value: Any) -> Any:
    if ctx.operation == "set":
        ctx.set_state(value)
        return None
    return ctx.get_state(str)


def everything(ctx: task.OrchestrationContext, value: str) -> Any:
    activity = yield ctx.call_activity(echo, input=value)
    sub = yield ctx.call_sub_orchestrator(child, input=value)
    ctx.set_custom_status(text(BIG, "s"))
    event = yield ctx.wait_for_external_event("big")
    entity = entities.EntityInstanceId("counter", ctx.instance_id)
    yield ctx.call_entity(entity, "set", text(BIG, "e"))
    state = yield ctx.call_entity(entity, "get")
    return {"activity": len(activity), "sub": sub[:3], "event": len(event), "state": len(state), "echo": value}


def test_every_payload_kind_round_trips_through_blobs(blob_side: Side) -> None:
    blob_side.worker(everything, child, activities=(echo,), entities=(counter,))
    c = blob_side.client()
    iid = c.schedule_new_orchestration(everything, input=text(HUGE, "ab"))
    c.wait_for_orchestration_start(iid, timeout=30)
    c.raise_orchestration_event(iid, "big", data=text(BIG, "v"))
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output or "") == {
        "activity": HUGE + 1,
        "sub": "ABA",
        "event": BIG,
        "state": BIG,
        "echo": text(HUGE, "ab"),
    }
    assert state.serialized_input == json.dumps(text(HUGE, "ab"))
    assert state.serialized_custom_status == json.dumps(text(BIG, "s"))

    # What the service holds are tokens: a client without the store sees them, not the payloads.
    raw = blob_side.client(store=None).get_orchestration_state(iid)
    assert raw is not None and is_token(raw.serialized_input) and is_token(raw.serialized_custom_status)
    assert is_token(raw.serialized_output)
    history = c.get_orchestration_history(iid)
    assert not any(is_token(getattr(e, "input", None)) for e in history)
    entity = c.get_entity(entities.EntityInstanceId("counter", iid))
    assert entity is not None and entity.get_state(str) == json.dumps(text(BIG, "e"))


def test_small_payloads_stay_inline(blob_side: Side) -> None:
    blob_side.worker(child)
    c = blob_side.client()
    iid = c.schedule_new_orchestration(child, input="small")
    c.wait_for_orchestration_completion(iid, timeout=30)
    raw = blob_side.client(store=None).get_orchestration_state(iid)
    assert raw is not None and raw.serialized_input == '"small"' and raw.serialized_output == '"SMALL"'


def restarts(ctx: task.OrchestrationContext, value: str) -> Any:
    if len(value) < BIG + 2:
        ctx.continue_as_new(value + "+")
        return None
    yield ctx.wait_for_external_event("never")
    return None


def test_continue_as_new_input_and_terminate_output(blob_side: Side) -> None:
    blob_side.worker(restarts)
    c = blob_side.client()
    iid = c.schedule_new_orchestration(restarts, input=text(BIG, "c"))
    state = c.wait_for_orchestration_start(iid, timeout=30)
    for _ in range(100):
        state = c.get_orchestration_state(iid)
        if state is not None and state.serialized_input and len(state.serialized_input) >= BIG + 4:
            break
        asyncio.run(asyncio.sleep(0.1))
    assert state is not None and json.loads(state.serialized_input or "") == text(BIG, "c") + "++"
    c.terminate_orchestration(iid, output=text(BIG, "t"))
    done = c.wait_for_orchestration_completion(iid, timeout=30)
    assert done is not None and done.runtime_status == client.OrchestrationStatus.TERMINATED
    assert done.serialized_output == json.dumps(text(BIG, "t"))


def test_signal_entity_input_and_async_client(blob_side: Side, azurite: Any) -> None:
    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

    blob_side.worker(entities=(counter,))
    entity = entities.EntityInstanceId("counter", "async")
    assert blob_side.store is not None

    async def run() -> Any:
        # The asyncio storage client belongs to the loop it first ran on: one store per loop.
        options = BlobPayloadStoreOptions(
            connection_string=azurite.connection_string, container_name=blob_side.store.options.container_name
        )
        async with BlobPayloadStore(options) as store:
            c = client.AsyncTaskHubGrpcClient(
                host_address=blob_side.address, metadata=blob_side.metadata, payload_store=store
            )
            try:
                await c.signal_entity(entity, "set", text(HUGE, "q"))
                for _ in range(200):
                    found = await c.get_entity(entity)
                    if found is not None:
                        return json.loads(found.get_state(str))
                    await asyncio.sleep(0.05)
                return None
            finally:
                await c.close()
                store.close()

    assert asyncio.run(run()) == text(HUGE, "q")


def test_over_the_stored_limit_names_the_field(blob_side: Side) -> None:
    assert blob_side.store is not None
    blob_side.store.options.max_stored_payload_bytes = 2 * 1024 * 1024
    # Refused at the call site, before anything is stored or sent.
    with pytest.raises(PayloadTooLargeError, match=r"^input of instance 'too-big' is 3145730 bytes") as caught:
        blob_side.client().schedule_new_orchestration(child, input=text(HUGE), instance_id="too-big")
    assert caught.value.limit == 2 * 1024 * 1024


def test_missing_blob_fails_the_read_naming_instance_and_field(blob_side: Side) -> None:
    c = blob_side.client()
    iid = c.schedule_new_orchestration("nobody-runs-this", input=text(BIG))
    raw = blob_side.client(store=None).get_orchestration_state(iid)
    assert raw is not None and raw.serialized_input is not None
    container, name = raw.serialized_input[len("blob:v1:") :].split(":", 1)
    blob_side.store._sync.get_container_client(container).delete_blob(name)  # type: ignore[union-attr]
    with pytest.raises(PayloadStoreError) as caught:
        c.get_orchestration_state(iid)
    assert caught.value.instance_id == iid and "input" in caught.value.field
    assert iid in str(caught.value) and "input" in str(caught.value)


def test_unreachable_store_is_a_clear_error(emulator_port: int) -> None:
    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

    dead = BlobPayloadStore(
        BlobPayloadStoreOptions(
            connection_string="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=AAAA;"
            "BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;",
            retry_total=0,
        )
    )
    c = client.TaskHubGrpcClient(host_address=f"localhost:{emulator_port}", payload_store=dead)
    with pytest.raises(PayloadStoreError, match=r"cannot store the input of instance 'unreachable'"):
        c.schedule_new_orchestration("x", input=text(BIG), instance_id="unreachable")
    c.close()
