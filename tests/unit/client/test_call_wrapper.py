"""The clients' call path over a real channel: metadata, deadlines, retries, error mapping, channel health."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import grpc
import pytest

from durabletask import client
from durabletask._grpc.errors import (
    AlreadyExistsError,
    DeadlineExceededError,
    NotFoundError,
    RpcStatusError,
    UnavailableError,
)
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.grpc_options import GrpcChannelOptions, GrpcClientResiliencyOptions, GrpcRetryPolicyOptions

from .fake_sidecar import SidecarServer

HUB = [("taskhub", "hub-a")]


def sync_client(sidecar: SidecarServer, **kwargs: Any) -> client.TaskHubGrpcClient:
    return client.TaskHubGrpcClient(host_address=sidecar.address, metadata=HUB, **kwargs)


def block_until_deadline(request: Any, context: grpc.ServicerContext) -> Any:
    # Waits for the client's deadline to cancel the call; the event is never set.
    done = threading.Event()
    context.add_callback(done.set)
    done.wait(10)
    return pb.GetInstanceResponse()


# ---------------------------------------------------------------------------------------------------- sync


def test_every_call_carries_the_metadata(sidecar: SidecarServer) -> None:
    with sync_client(sidecar) as c:
        c.get_orchestration_state("a")
        c.raise_orchestration_event("a", "go", data=1)
        c.get_orchestration_history("a")  # a server stream
    assert [r.metadata.get("taskhub") for r in sidecar.fake.received] == ["hub-a"] * 3


def test_status_codes_map_to_sdk_errors_that_are_still_rpc_errors(sidecar: SidecarServer) -> None:
    sidecar.fake.fail_next["StartInstance"] = [grpc.StatusCode.ALREADY_EXISTS]
    with sync_client(sidecar) as c, pytest.raises(AlreadyExistsError) as info:
        c.schedule_new_orchestration("flow", instance_id="dup")
    err = info.value
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "scripted ALREADY_EXISTS" in err.details() and "StartInstance" in str(err)
    assert isinstance(err.__cause__, grpc.RpcError) and not isinstance(err.__cause__, RpcStatusError)


def test_unavailable_reads_are_retried(sidecar: SidecarServer) -> None:
    sidecar.fake.fail_next["GetInstance"] = [grpc.StatusCode.UNAVAILABLE] * 2
    with sync_client(sidecar) as c:
        assert c.get_orchestration_state("a") is None
    assert len(sidecar.fake.calls("GetInstance")) == 3


def test_retries_stop_after_the_policy_limit(sidecar: SidecarServer) -> None:
    attempts = GrpcRetryPolicyOptions().max_attempts
    sidecar.fake.fail_next["GetInstance"] = [grpc.StatusCode.UNAVAILABLE] * (attempts + 1)
    with sync_client(sidecar) as c, pytest.raises(UnavailableError):
        c.get_orchestration_state("a")
    assert len(sidecar.fake.calls("GetInstance")) == attempts


def test_writes_are_not_retried(sidecar: SidecarServer) -> None:
    sidecar.fake.fail_next["RaiseEvent"] = [grpc.StatusCode.UNAVAILABLE]
    with sync_client(sidecar) as c, pytest.raises(UnavailableError):
        c.raise_orchestration_event("a", "go")
    assert len(sidecar.fake.calls("RaiseEvent")) == 1


def test_non_transient_errors_are_not_retried(sidecar: SidecarServer) -> None:
    sidecar.fake.fail_next["GetInstance"] = [grpc.StatusCode.NOT_FOUND]
    with sync_client(sidecar) as c, pytest.raises(NotFoundError):
        c.get_orchestration_state("a")
    assert len(sidecar.fake.calls("GetInstance")) == 1


def test_a_channel_retry_policy_replaces_client_retries(sidecar: SidecarServer) -> None:
    options = GrpcChannelOptions(retry_policy=GrpcRetryPolicyOptions(max_attempts=2))
    sidecar.fake.fail_next["GetInstance"] = [grpc.StatusCode.UNAVAILABLE] * 5
    with sync_client(sidecar, channel_options=options) as c, pytest.raises(UnavailableError):
        c.get_orchestration_state("a")
    # gRPC's own retry made exactly max_attempts calls; the client added none on top.
    assert len(sidecar.fake.calls("GetInstance")) == 2


def test_wait_timeout_becomes_the_call_deadline_and_a_timeout_error(sidecar: SidecarServer) -> None:
    sidecar.fake.handlers["WaitForInstanceCompletion"] = block_until_deadline
    with sync_client(sidecar) as c, pytest.raises(TimeoutError, match="'slow' to complete") as info:
        c.wait_for_orchestration_completion("slow", timeout=0.3)
    assert isinstance(info.value, DeadlineExceededError)
    (call,) = sidecar.fake.calls("WaitForInstanceCompletion")
    # gRPC sends the timeout rounded up to its wire units, so the server may see a hair more than 0.3 s.
    assert call.deadline is not None and 0 < call.deadline <= 0.31


def test_calls_without_a_timeout_have_no_deadline(sidecar: SidecarServer) -> None:
    with sync_client(sidecar) as c:
        c.get_orchestration_state("a")
    assert sidecar.fake.calls("GetInstance")[0].deadline is None


def test_channel_is_rebuilt_after_repeated_transport_failures(sidecar: SidecarServer) -> None:
    options = GrpcClientResiliencyOptions(channel_recreate_failure_threshold=2, min_recreate_interval_seconds=0)
    sidecar.fake.fail_next["RaiseEvent"] = [grpc.StatusCode.UNAVAILABLE] * 2
    with sync_client(sidecar, resiliency_options=options) as c:
        first = c._channel
        for _ in range(2):
            with pytest.raises(UnavailableError):
                c.raise_orchestration_event("a", "go")
        assert c._channel is not first
        c.raise_orchestration_event("a", "go")  # the new channel works and keeps the metadata
    assert sidecar.fake.calls("RaiseEvent")[-1].metadata["taskhub"] == "hub-a"


def test_a_caller_owned_channel_is_left_open(sidecar: SidecarServer) -> None:
    channel = grpc.insecure_channel(sidecar.address)
    try:
        with client.TaskHubGrpcClient(channel=channel, metadata=HUB) as c:
            c.get_orchestration_state("a")
        grpc.channel_ready_future(channel).result(timeout=5)
    finally:
        channel.close()
    assert sidecar.fake.calls("GetInstance")[0].metadata["taskhub"] == "hub-a"


def test_history_stream_is_collected_in_order(sidecar: SidecarServer) -> None:
    def chunks(request: Any, context: Any) -> list[pb.HistoryChunk]:
        return [
            pb.HistoryChunk(events=[pb.HistoryEvent(eventId=-1, orchestratorStarted=pb.OrchestratorStartedEvent())]),
            pb.HistoryChunk(events=[pb.HistoryEvent(eventId=0, eventRaised=pb.EventRaisedEvent(name="go"))]),
        ]

    sidecar.fake.handlers["StreamInstanceHistory"] = chunks
    with sync_client(sidecar) as c:
        events = c.get_orchestration_history("a", execution_id="e1")
    assert [type(e).__name__ for e in events] == ["OrchestratorStartedEvent", "EventRaisedEvent"]
    assert sidecar.fake.calls("StreamInstanceHistory")[0].request.executionId.value == "e1"


# ------------------------------------------------------------------------------------------ event-loop guard


def test_sync_calls_inside_an_event_loop_block_and_succeed_by_default(sidecar: SidecarServer) -> None:
    # Microsoft's client blocks there (FastAPI/aiohttp handlers, Jupyter, pytest-asyncio tests rely on it).
    with sync_client(sidecar) as c:

        async def inside_the_loop() -> Any:
            return c.get_orchestration_state("a")

        assert asyncio.run(inside_the_loop()) is None
    assert len(sidecar.fake.calls("GetInstance")) == 1


def test_sync_calls_inside_an_event_loop_fail_fast_when_asked_and_point_at_the_async_client(
    sidecar: SidecarServer,
) -> None:
    c = sync_client(sidecar, fail_in_event_loop=True)

    async def misuse() -> None:
        c.wait_for_orchestration_completion("a", timeout=1)

    try:
        with pytest.raises(client.SyncCallInEventLoopError, match="AsyncTaskHubGrpcClient") as info:
            asyncio.run(misuse())
        assert "wait_for_orchestration_completion" in str(info.value) and isinstance(info.value, RuntimeError)
        assert sidecar.fake.received == []
    finally:
        c.close()


def test_sync_calls_from_a_thread_started_by_a_loop_are_allowed(sidecar: SidecarServer) -> None:
    with sync_client(sidecar, fail_in_event_loop=True) as c:

        async def offload() -> Any:
            return await asyncio.to_thread(c.get_orchestration_state, "a")

        assert asyncio.run(offload()) is None
    assert len(sidecar.fake.calls("GetInstance")) == 1


# --------------------------------------------------------------------------------------------------- async


async def test_async_client_shares_the_call_path(sidecar: SidecarServer) -> None:
    sidecar.fake.fail_next["GetInstance"] = [grpc.StatusCode.UNAVAILABLE]
    sidecar.fake.fail_next["TerminateInstance"] = [grpc.StatusCode.NOT_FOUND]
    async with client.AsyncTaskHubGrpcClient(host_address=sidecar.address, metadata=HUB) as c:
        assert await c.get_orchestration_state("a") is None
        assert await c.get_orchestration_history("a") == []
        with pytest.raises(NotFoundError):
            await c.terminate_orchestration("a")
    assert len(sidecar.fake.calls("GetInstance")) == 2
    assert {r.metadata.get("taskhub") for r in sidecar.fake.received} == {"hub-a"}


async def test_async_wait_timeout(sidecar: SidecarServer) -> None:
    sidecar.fake.handlers["WaitForInstanceStart"] = block_until_deadline
    async with client.AsyncTaskHubGrpcClient(host_address=sidecar.address) as c:
        with pytest.raises(TimeoutError, match="'slow' to start"):
            await c.wait_for_orchestration_start("slow", timeout=0.3)


async def test_async_client_refuses_calls_after_close(sidecar: SidecarServer) -> None:
    c = client.AsyncTaskHubGrpcClient(host_address=sidecar.address)
    await c.get_orchestration_state("a")
    await c.close()
    with pytest.raises(RuntimeError, match="closed"):
        await c.get_orchestration_state("a")


async def test_async_channel_is_rebuilt_after_repeated_transport_failures(sidecar: SidecarServer) -> None:
    options = GrpcClientResiliencyOptions(channel_recreate_failure_threshold=2, min_recreate_interval_seconds=0)
    sidecar.fake.fail_next["RaiseEvent"] = [grpc.StatusCode.UNAVAILABLE] * 2
    async with client.AsyncTaskHubGrpcClient(
        host_address=sidecar.address, metadata=HUB, resiliency_options=options
    ) as c:
        await c.get_orchestration_state("a")
        first = c._channel
        for _ in range(2):
            with pytest.raises(UnavailableError):
                await c.raise_orchestration_event("a", "go")
        assert c._channel is not first
        await c.raise_orchestration_event("a", "go")
    assert sidecar.fake.calls("RaiseEvent")[-1].metadata["taskhub"] == "hub-a"
