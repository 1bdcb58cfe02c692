"""Histories holding payload tokens, on a real Azurite: the worker restores a history it streams
(``requiresHistoryStreaming``), a client with the store reads history events with their payloads (as
Microsoft's ``get_orchestration_history`` does), a client without it sees the tokens."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from durabletask import client, history, task, worker
from durabletask._worker.session_cache import ExtendedSessionOptions

from .conftest import Side

BIG = 300 * 1024  # over the 256 KiB threshold


def text(size: int, seed: str) -> str:
    return (seed * size)[:size]


def echo(ctx: task.ActivityContext, value: str) -> str:
    return value + "!"


def relay(ctx: task.OrchestrationContext, value: str) -> Any:
    event = yield ctx.wait_for_external_event("data")
    echoed = yield ctx.call_activity(echo, input=value)
    return {"input": len(value), "event": event[:2] + str(len(event)), "echoed": len(echoed)}


@pytest.fixture
def streaming(emulator_server: Any) -> Iterator[Any]:
    """Every work item's history is streamed, as for histories over the service's message size."""
    engine = emulator_server.engine
    before = engine.history_streaming_threshold
    engine.history_streaming_threshold = 0
    try:
        yield engine
    finally:
        engine.history_streaming_threshold = before


def run_relay(side: Side) -> tuple[client.TaskHubGrpcClient, str]:
    c = side.client()
    iid = c.schedule_new_orchestration(relay, input=text(BIG, "i"))
    c.wait_for_orchestration_start(iid, timeout=30)
    c.raise_orchestration_event(iid, "data", data=text(BIG, "e"))
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output or "") == {"input": BIG, "event": f"ee{BIG}", "echoed": BIG + 1}
    return c, iid


def test_a_streamed_history_holding_tokens_is_restored_by_the_worker(blob_side: Side, streaming: Any) -> None:
    # No session: every step replays the whole history, fetched with StreamInstanceHistory.
    w = worker.TaskHubGrpcWorker(
        host_address=blob_side.address,
        metadata=blob_side.metadata,
        payload_store=blob_side.store,
        extended_sessions=ExtendedSessionOptions(max_cached_orchestrations=0),
    )
    w.add_orchestrator(relay)
    w.add_activity(echo)
    streamed = streaming.streamed_histories
    with w:
        w.start()
        run_relay(blob_side)
    assert streaming.streamed_histories >= streamed + 2  # the event's step and the activity result's step


def payloads_of(events: list[history.HistoryEvent]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for e in events:
        for field in ("input", "result"):
            value = getattr(e, field, None)
            if isinstance(value, str):
                found[f"{type(e).__name__}.{field}"] = value
    return found


def test_history_events_come_back_with_their_payloads(blob_side: Side) -> None:
    blob_side.worker(relay, activities=(echo,))
    c, iid = run_relay(blob_side)
    found = payloads_of(c.get_orchestration_history(iid))
    assert found["ExecutionStartedEvent.input"] == json.dumps(text(BIG, "i"))
    assert found["EventRaisedEvent.input"] == json.dumps(text(BIG, "e"))
    assert found["TaskScheduledEvent.input"] == json.dumps(text(BIG, "i"))
    assert found["TaskCompletedEvent.result"] == json.dumps(text(BIG, "i") + "!")

    async def read() -> dict[str, Any]:
        from durabletask.extensions.azure_blob_payloads import BlobPayloadStore

        store: Any = blob_side.store
        async with BlobPayloadStore(store.options) as own:  # the asyncio storage client belongs to its loop
            ac = client.AsyncTaskHubGrpcClient(
                host_address=blob_side.address, metadata=blob_side.metadata, payload_store=own
            )
            try:
                return payloads_of(await ac.get_orchestration_history(iid))
            finally:
                await ac.close()
                own.close()

    assert asyncio.run(read()) == found

    # Without the store the history holds the tokens, as the service stores it.
    raw = payloads_of(blob_side.client(store=None).get_orchestration_history(iid))
    assert raw.keys() == found.keys()
    for key, value in raw.items():
        assert value.startswith("blob:v1:") if len(found[key]) > BIG else value == found[key], key
