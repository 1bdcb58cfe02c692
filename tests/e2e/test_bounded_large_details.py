"""Heartbeat details of any size up to their 64 KiB limit reach the next attempt.

Details small enough travel in the next attempt's tag. A tag value is limited to 4,096 characters (the emulator
enforces the limit DTS has), so larger details are read by the next attempt's worker from the orchestration's
history, where the heartbeat that carried them is recorded.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task

from .conftest import Hub, unique_id

WAIT = 60
_stopped: dict[str, threading.Event] = {}
_resumed: dict[str, Any] = {}


def _event(instance_id: str) -> threading.Event:
    return _stopped.setdefault(instance_id, threading.Event())


def _first_attempt(ctx: task.ActivityContext, size: int) -> str:
    """Heartbeats twice (the second details are the ones that count), then waits to be stopped."""
    ctx.heartbeat({"page": 1, "notes": "a" * size})
    ctx.heartbeat({"page": 2, "notes": "b" * size})
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if ctx.is_cancellation_requested:
            _event(ctx.orchestration_id).set()
            raise task.ActivityCancelledError("noticed by polling")
        time.sleep(0.05)
    return "never asked to stop"


def extract(ctx: task.ActivityContext, size: int) -> Any:
    if ctx.heartbeat_details is not None:
        _resumed[ctx.orchestration_id] = ctx.heartbeat_details
        return "resumed"
    return _first_attempt(ctx, size)


async def extract_async(ctx: task.ActivityContext, size: int) -> Any:
    if ctx.heartbeat_details is not None:
        _resumed[ctx.orchestration_id] = ctx.heartbeat_details
        return "resumed"
    return _first_attempt(ctx, size)


def pipeline(ctx: task.OrchestrationContext, plan: dict[str, Any]) -> Any:
    retry = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=100), max_number_of_attempts=2)
    activity = extract_async if plan["async"] else extract
    return (
        yield ctx.call_activity(
            activity, input=plan["size"], heartbeat_timeout=timedelta(seconds=2), retry_policy=retry
        )
    )


@pytest.mark.parametrize(
    ("size", "is_async"),
    [(100, False), (8_000, False), (60_000, False), (20_000, True)],
    ids=["in-the-tag", "8k", "60k", "20k-async"],
)
def test_the_retry_resumes_from_the_last_details_whatever_their_size(hub: Hub, size: int, is_async: bool) -> None:
    hub.start_worker([pipeline], [extract, extract_async])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(
        pipeline, input={"size": size, "async": is_async}, instance_id=unique_id("details")
    )
    state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    assert state is not None
    assert state.runtime_status == client.OrchestrationStatus.COMPLETED, state.failure_details
    assert json.loads(state.serialized_output or "null") == "resumed"
    assert _resumed[instance_id] == {"page": 2, "notes": "b" * size}


def test_a_heartbeat_missing_from_the_history_is_a_clear_error(hub: Hub) -> None:
    import grpc

    from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
    from durabletask._worker.heartbeat_details import HeartbeatDetailsError, read_details

    if hub.backend is not None:
        pytest.skip("reads the emulator directly with the hub's metadata")
    hub.start_worker([pipeline], [extract, extract_async])
    c = hub.client()
    instance_id = c.schedule_new_orchestration(pipeline, input={"size": 10, "async": False}, instance_id=unique_id("d"))
    c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
    with grpc.insecure_channel(hub.address.removeprefix("http://")) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(_with_hub(channel, hub))
        # Both heartbeat() calls came before the first send, so the one heartbeat sent carries the second.
        assert json.loads(read_details(stub, instance_id, "", (1, 1))) == {"page": 2, "notes": "b" * 10}
        with pytest.raises(HeartbeatDetailsError, match=r"holds no heartbeat #9 with details from task #1"):
            read_details(stub, instance_id, "", (1, 9))
        with pytest.raises(HeartbeatDetailsError, match="could not be read from the history of 'missing-"):
            read_details(stub, f"missing-{instance_id}", "", (1, 1))


def _with_hub(channel: Any, hub: Hub) -> Any:
    import grpc

    class _Hub(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
        def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
            metadata = [*(details.metadata or []), *hub.metadata]
            return continuation(details._replace(metadata=metadata), request)

    return grpc.intercept_channel(channel, _Hub())
