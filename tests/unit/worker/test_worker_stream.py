"""The worker against an in-process fake sidecar: stream requests, dispatch, completions, resilience."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from concurrent import futures
from typing import Any

import grpc
import pytest
from conftest import FAST, WorkerFactory
from google.protobuf import wrappers_pb2
from worker_fakes import WAIT, FakeExecutor, FakeSidecar, Server, activity_item, health_ping, orchestration_item

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._worker.stream import ChannelProvider, StreamLoop
from durabletask.grpc_options import GrpcWorkerResiliencyOptions
from durabletask.worker import (
    ConcurrencyOptions,
    TaskHubGrpcWorker,
    VersionFailureStrategy,
    VersioningOptions,
    VersionMatchStrategy,
    WorkItemFilters,
)
from tests.conftest import watch_log
from tests.support.reliability import wait_until


def double(ctx: object, value: int) -> int:
    return value * 2


def test_stream_request_carries_limits_capabilities_and_filters(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker(
        concurrency_options=ConcurrencyOptions(
            maximum_concurrent_activity_work_items=3,
            maximum_concurrent_orchestration_work_items=4,
            maximum_concurrent_entity_work_items=5,
        )
    )
    worker.use_work_item_filters()
    worker.add_activity(double)  # registered after the call: filters are generated at start()
    worker.add_capability(pb.WORKER_CAPABILITY_SCHEDULED_TASKS)
    worker.start()

    request = server.sidecar.next_stream().request
    assert server.sidecar.hellos == 1
    assert request.maxConcurrentActivityWorkItems == 3
    assert request.maxConcurrentOrchestrationWorkItems == 4
    assert request.maxConcurrentEntityWorkItems == 5
    # What the caller added, plus what the worker itself supports (history streaming, extended sessions).
    assert pb.WORKER_CAPABILITY_SCHEDULED_TASKS in request.capabilities
    assert pb.WORKER_CAPABILITY_HISTORY_STREAMING in request.capabilities
    assert [f.name for f in request.workItemFilters.activities] == ["double"]
    assert request.HasField("workItemFilters")


def test_no_filters_unless_enabled(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    assert not server.sidecar.next_stream().request.HasField("workItemFilters")


def test_activity_is_run_and_completed(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    stream = server.sidecar.next_stream()
    stream.send(health_ping())
    stream.send(activity_item("double", "21", task_id=7, token="t-1"))

    rpc, response = server.sidecar.next_completion()
    assert rpc == "CompleteActivityTask"
    assert (response.instanceId, response.taskId, response.completionToken) == ("inst", 7, "t-1")
    assert json.loads(response.result.value) == 42
    assert not response.HasField("failureDetails")


def test_unregistered_activity_completes_with_failure(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.start()
    server.sidecar.next_stream().send(activity_item("missing"))

    _, response = server.sidecar.next_completion()
    assert response.failureDetails.errorType == "durabletask.worker.ActivityNotRegisteredError"
    assert "missing" in response.failureDetails.errorMessage


def test_orchestration_is_executed_and_completed(server: Server, make_worker: WorkerFactory) -> None:
    executor = FakeExecutor(custom_status='"busy"')
    worker = make_worker(executor)
    worker.start()
    server.sidecar.next_stream().send(orchestration_item("o-1", token="t-9"))

    rpc, response = server.sidecar.next_completion()
    assert rpc == "CompleteOrchestratorTask"
    assert (response.instanceId, response.completionToken) == ("o-1", "t-9")
    assert response.customStatus.value == '"busy"'
    assert response.actions[0].completeOrchestration.result.value == '"o-1"'
    assert executor.seen == ["o-1"]


@pytest.mark.parametrize(
    ("failure_strategy", "expected_rpc"),
    [
        (VersionFailureStrategy.REJECT, "AbandonTaskOrchestratorWorkItem"),
        (VersionFailureStrategy.FAIL, "CompleteOrchestratorTask"),
    ],
)
def test_version_mismatch_rejects_or_fails(
    server: Server, make_worker: WorkerFactory, failure_strategy: VersionFailureStrategy, expected_rpc: str
) -> None:
    executor = FakeExecutor()
    worker = make_worker(executor)
    worker.use_versioning(
        VersioningOptions(version="1.0", match_strategy=VersionMatchStrategy.STRICT, failure_strategy=failure_strategy)
    )
    worker.start()
    server.sidecar.next_stream().send(orchestration_item("o-2", version="2.0", token="t-2"))

    rpc, message = server.sidecar.next_completion()
    assert rpc == expected_rpc
    assert message.completionToken == "t-2"
    assert executor.seen == []  # the orchestration code never ran
    if failure_strategy is VersionFailureStrategy.FAIL:
        complete = message.actions[0].completeOrchestration
        assert complete.orchestrationStatus == pb.ORCHESTRATION_STATUS_FAILED
        assert complete.failureDetails.errorType == "VersionMismatch"
        assert "2.0" in complete.failureDetails.errorMessage


def test_registered_entity_batch_runs_on_the_default_entity_runner(server: Server, make_worker: WorkerFactory) -> None:
    def counter(ctx: Any, value: Any) -> Any:
        total = ctx.get_state(int, 0) + (value or 0)
        ctx.set_state(total)
        return total

    worker = make_worker()
    worker.add_entity(counter)
    worker.start()
    batch = pb.EntityBatchRequest(
        instanceId="@counter@c1",
        operations=[pb.OperationRequest(operation="add", input=wrappers_pb2.StringValue(value="5"))],
    )
    server.sidecar.next_stream().send(pb.WorkItem(entityRequest=batch, completionToken="t-e"))

    rpc, message = server.sidecar.next_completion()
    assert (rpc, message.completionToken) == ("CompleteEntityTask", "t-e")
    assert message.results[0].success.result.value == "5" and message.entityState.value == "5"


def test_unregistered_entity_operations_fail(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.start()
    stream = server.sidecar.next_stream()
    batch = pb.EntityBatchRequest(
        instanceId="@ledger@a",
        entityState=wrappers_pb2.StringValue(value="5"),
        operations=[pb.OperationRequest(operation="add", requestId="r1")],
    )
    stream.send(pb.WorkItem(entityRequest=batch, completionToken="v1"))
    called = pb.EntityOperationCalledEvent(
        requestId="r2",
        operation="get",
        parentInstanceId=wrappers_pb2.StringValue(value="caller"),
        parentExecutionId=wrappers_pb2.StringValue(value="exec-1"),
    )
    signaled = pb.EntityOperationSignaledEvent(requestId="r3", operation="reset")
    v2 = pb.EntityRequest(
        instanceId="@ledger@b",
        operationRequests=[
            pb.HistoryEvent(entityOperationCalled=called),
            pb.HistoryEvent(entityOperationSignaled=signaled),
        ],
    )
    stream.send(pb.WorkItem(entityRequestV2=v2, completionToken="v2"))

    results = {}
    for _ in range(2):
        rpc, message = server.sidecar.next_completion()
        assert rpc == "CompleteEntityTask"
        results[message.completionToken] = message
    first = results["v1"]
    assert first.entityState.value == "5"  # unchanged
    assert len(first.results) == 1
    failure = first.results[0].failure.failureDetails
    assert failure.errorType == "durabletask.worker.EntityNotRegisteredError"
    assert "'ledger'" in failure.errorMessage
    second = results["v2"]
    assert [r.WhichOneof("resultType") for r in second.results] == ["failure", "failure"]
    assert [(i.requestId, i.responseDestination.instanceId) for i in second.operationInfos] == [
        ("r2", "caller"),
        ("r3", ""),
    ]
    assert second.operationInfos[0].responseDestination.executionId.value == "exec-1"


def test_reconnects_after_the_server_ends_the_stream(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    server.sidecar.next_stream().end()

    second = server.sidecar.next_stream()
    assert server.sidecar.hellos == 2  # every connection starts with the handshake
    second.send(activity_item("double", "1"))
    assert json.loads(server.sidecar.next_completion()[1].result.value) == 2


def test_lost_lease_completion_is_dropped_and_the_loop_continues(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    # The two activities may finish in either order: only the stale one's completion is refused.
    server.sidecar.reject("CompleteActivityTask", grpc.StatusCode.NOT_FOUND, "unknown completion token", token="stale")
    stream = server.sidecar.next_stream()
    stream.send(activity_item("double", "1", token="stale"))
    stream.send(activity_item("double", "3", token="fresh"))

    _, response = server.sidecar.next_completion()
    assert response.completionToken == "fresh"
    assert server.sidecar.streams.empty()  # the stream survived


def test_transient_completion_error_is_retried(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    server.sidecar.reject("CompleteActivityTask", grpc.StatusCode.UNAVAILABLE, "try again")
    server.sidecar.next_stream().send(activity_item("double", "4", token="t"))
    _, response = server.sidecar.next_completion()
    assert json.loads(response.result.value) == 8


def test_a_bad_work_item_does_not_end_the_stream(server: Server, make_worker: WorkerFactory) -> None:
    def explode(ctx: object, value: object) -> None:
        raise RuntimeError("boom")

    class BrokenExecutor(FakeExecutor):
        def execute(self, *args: object) -> object:  # type: ignore[override]
            raise AssertionError("executor bug")

    worker = make_worker(BrokenExecutor())
    worker.add_activity(explode)
    worker.add_activity(double)
    worker.start()
    stream = server.sidecar.next_stream()
    stream.send(pb.WorkItem(completionToken="empty"))  # no request at all
    stream.send(orchestration_item("o-bad"))
    stream.send(activity_item("explode", "{not json", token="bad-input"))
    stream.send(activity_item("double", "6", token="good"))

    received = {}
    for _ in range(3):
        rpc, message = server.sidecar.next_completion()
        received[message.completionToken if rpc == "CompleteActivityTask" else message.instanceId] = message
    assert received["o-bad"].actions[0].completeOrchestration.failureDetails.errorMessage == "executor bug"
    assert received["bad-input"].failureDetails.errorType == "durabletask._errors.SerializationError"
    assert json.loads(received["good"].result.value) == 12
    assert server.sidecar.streams.empty()


def test_async_activity_runs_on_the_event_loop(server: Server, make_worker: WorkerFactory) -> None:
    async def shout(ctx: object, text: str) -> str:
        return text.upper()

    worker = make_worker()
    worker.add_activity(shout)
    worker.start()
    server.sidecar.next_stream().send(activity_item("shout", '"hi"'))
    assert json.loads(server.sidecar.next_completion()[1].result.value) == "HI"


def test_concurrency_limit_holds_back_reading(
    server: Server, make_worker: WorkerFactory, logger: logging.Logger
) -> None:
    release = threading.Event()
    running: list[int] = []
    peak = [0]
    lock = threading.Lock()

    def slow(ctx: object, value: int) -> int:
        with lock:
            running.append(value)
            peak[0] = max(peak[0], len(running))
        release.wait(WAIT)
        with lock:
            running.remove(value)
        return value

    worker = make_worker(concurrency_options=ConcurrencyOptions(maximum_concurrent_activity_work_items=2))
    worker.add_activity(slow)
    worker.start()
    stream = server.sidecar.next_stream()
    with watch_log(logger, "all 2 activity slots are in use") as full:
        for i in range(5):
            stream.send(activity_item("slow", str(i), task_id=i))
        # The third item was read and waits for a slot: had the limit been broken, it would be running instead.
        full.wait_for(1, WAIT)
        wait_until(lambda: len(running) == 2, WAIT, "the first two activities to run")
        assert len(running) == 2 and full.count == 1  # reading stopped at the third item
    release.set()
    results = sorted(json.loads(server.sidecar.next_completion()[1].result.value) for _ in range(5))
    assert results == [0, 1, 2, 3, 4]
    assert peak[0] == 2


def test_completions_are_sent_concurrently(server: Server, make_worker: WorkerFactory) -> None:
    in_complete = threading.Barrier(2, timeout=WAIT)
    original = server.sidecar.CompleteActivityTask

    def blocking_complete(request: pb.ActivityResponse, context: grpc.ServicerContext) -> object:
        in_complete.wait()  # both completions must be in flight at once to pass this barrier
        return original(request, context)

    server.sidecar.CompleteActivityTask = blocking_complete  # type: ignore[method-assign]
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    stream = server.sidecar.next_stream()
    stream.send(activity_item("double", "1", token="a"))
    stream.send(activity_item("double", "2", token="b"))
    tokens = {server.sidecar.next_completion()[1].completionToken for _ in range(2)}
    assert tokens == {"a", "b"}


def test_stop_lets_running_work_finish(server: Server, make_worker: WorkerFactory) -> None:
    started = threading.Event()
    release = threading.Event()

    def slow(ctx: object, value: int) -> int:
        started.set()
        release.wait(WAIT)
        return value

    worker = make_worker()
    worker.add_activity(slow)
    worker.start()
    stream = server.sidecar.next_stream()
    stream.send(activity_item("slow", "9", token="inflight"))
    assert started.wait(WAIT)

    stopper = threading.Thread(target=worker.stop, kwargs={"grace_period": WAIT})
    stopper.start()
    assert stream.closed.wait(WAIT)  # stop() ends the stream before waiting for work
    assert stopper.is_alive()  # ... and is still waiting for the running activity
    release.set()
    stopper.join(WAIT)
    assert not stopper.is_alive()
    rpc, response = server.sidecar.next_completion(timeout=0)
    assert (rpc, response.completionToken) == ("CompleteActivityTask", "inflight")
    assert not worker.is_running


def test_stop_gives_up_after_the_grace_period(server: Server, make_worker: WorkerFactory) -> None:
    started = threading.Event()
    release = threading.Event()

    def stuck(ctx: object, value: object) -> None:
        started.set()
        release.wait(WAIT)

    worker = make_worker()
    worker.add_activity(stuck)
    worker.start()
    server.sidecar.next_stream().send(activity_item("stuck"))
    assert started.wait(WAIT)
    began = time.monotonic()
    worker.stop(grace_period=0.2)
    assert 0.2 <= time.monotonic() - began < WAIT
    release.set()


def test_start_twice_and_changes_while_running_are_refused(make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.start()
    with pytest.raises(RuntimeError):
        worker.start()
    with pytest.raises(RuntimeError):
        worker.add_activity(double)
    with pytest.raises(RuntimeError):
        worker.use_work_item_filters(WorkItemFilters())
    worker.stop()
    worker.stop()  # idempotent
    worker.add_activity(double)


def test_a_stopped_worker_can_start_again(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    first = server.sidecar.next_stream()
    worker.stop()
    assert first.closed.wait(WAIT)
    worker.start()
    server.sidecar.next_stream().send(activity_item("double", "8"))
    assert json.loads(server.sidecar.next_completion()[1].result.value) == 16


def test_reconnects_when_the_server_is_down_at_start(logger: logging.Logger) -> None:
    srv = Server()
    address, port = srv.address, srv.port
    srv.stop()
    worker = TaskHubGrpcWorker(host_address=address, logger=logger, resiliency_options=FAST)
    try:
        with watch_log(logger, f"could not connect to {address}") as refused:
            worker.start()
            refused.wait_for(2, WAIT)  # the worker has kept trying while nothing listened
        sidecar = FakeSidecar()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        pb_grpc.add_TaskHubSidecarServiceServicer_to_server(sidecar, server)
        if server.add_insecure_port(f"127.0.0.1:{port}") != port:
            pytest.skip("the port was taken in the meantime")
        server.start()
        try:
            assert sidecar.next_stream() is not None
        finally:
            worker.stop(grace_period=1)
            server.stop(None).wait()
    finally:
        worker.stop(grace_period=1)


def test_stop_cancels_a_pending_handshake(server: Server, make_worker: WorkerFactory) -> None:
    in_hello = threading.Event()
    release = threading.Event()

    def slow_hello() -> None:
        in_hello.set()
        release.wait(WAIT)

    server.sidecar.hello_gate = slow_hello
    worker = make_worker()
    worker.start()
    assert in_hello.wait(WAIT)
    began = time.monotonic()
    worker.stop(grace_period=1)
    assert time.monotonic() - began < 4  # not held for the 5s handshake deadline
    release.set()
    assert server.sidecar.streams.empty()


def test_context_managers_stop_the_worker(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    with worker:
        worker.start()
        server.sidecar.next_stream()
        assert worker.is_running
    assert not worker.is_running


async def test_async_context_manager_stops_the_worker(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    async with worker:
        worker.start()
        assert worker.is_running
    assert not worker.is_running


def test_repeated_connection_failures_rebuild_the_channel(logger: logging.Logger) -> None:
    srv = Server()
    address = srv.address
    srv.stop()  # nothing listens there any more
    opened: list[grpc.Channel] = []
    rebuilt = threading.Event()

    def open_channel() -> grpc.Channel:
        opened.append(grpc.insecure_channel(address))
        if len(opened) == 2:
            rebuilt.set()
        return opened[-1]

    options = GrpcWorkerResiliencyOptions(
        channel_recreate_failure_threshold=2,
        reconnect_backoff_base_seconds=0.01,
        reconnect_backoff_cap_seconds=0.02,
    )
    channels = ChannelProvider(None, open_channel)
    loop = StreamLoop(
        channels=channels,
        request=pb.GetWorkItemsRequest,
        on_work_item=lambda item, stub, done: done(),
        resiliency=options,
        logger=logger,
        address=address,
    )
    runner = threading.Thread(target=loop.run)
    runner.start()
    try:
        assert rebuilt.wait(WAIT)
    finally:
        loop.stop()
        runner.join(WAIT)
        channels.close()
    assert not runner.is_alive()


def test_a_completion_refused_as_too_large_is_sent_once(server: Server, make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    server.sidecar.reject(
        "CompleteActivityTask", grpc.StatusCode.RESOURCE_EXHAUSTED, "result exceeds 1 MiB", times=2, token="big"
    )
    stream = server.sidecar.next_stream()
    stream.send(activity_item("double", "1", token="big"))
    stream.send(activity_item("double", "2", token="after"))
    _, response = server.sidecar.next_completion()
    assert response.completionToken == "after"
    worker.stop()
    assert server.sidecar.rejections["CompleteActivityTask"].remaining == 1  # refused once, never sent again


def test_a_completion_outlives_two_channel_rebuilds(server: Server, make_worker: WorkerFactory) -> None:
    # Silent streams count as transport failures; with a threshold of 1 each one rebuilds the channel.
    # The slow activity was received on the first channel and answers on it after two rebuilds.
    started, release = threading.Event(), threading.Event()

    def slow(ctx: object, value: int) -> int:
        started.set()
        release.wait(WAIT)
        return value

    options = GrpcWorkerResiliencyOptions(
        hello_timeout_seconds=5,
        silent_disconnect_timeout_seconds=0.2,
        channel_recreate_failure_threshold=1,
        reconnect_backoff_base_seconds=0.01,
        reconnect_backoff_cap_seconds=0.02,
    )
    worker = make_worker(resiliency_options=options)
    worker.add_activity(slow)
    worker.start()
    server.sidecar.next_stream().send(activity_item("slow", "7", token="first-channel"))
    assert started.wait(WAIT)
    for _ in range(3):  # each stream goes silent, is cut, and the channel is rebuilt
        server.sidecar.next_stream()
    release.set()
    _, response = server.sidecar.next_completion()
    assert response.completionToken == "first-channel" and json.loads(response.result.value) == 7


def test_work_is_asked_for_only_after_the_before_leasing_hook(server: Server, logger: logging.Logger) -> None:
    # The worker waits there for results held back by a disconnection, so that the backend does not hand
    # the same work items straight back while their results are still on the way.
    seen: list[tuple[int, bool]] = []
    release = threading.Event()

    def before_leasing(stopping: threading.Event) -> None:
        seen.append((server.sidecar.hellos, server.sidecar.streams.empty()))
        release.wait(WAIT)

    channels = ChannelProvider(None, lambda: grpc.insecure_channel(server.address))
    loop = StreamLoop(
        channels=channels,
        request=pb.GetWorkItemsRequest,
        on_work_item=lambda item, stub, done: done(),
        resiliency=GrpcWorkerResiliencyOptions(hello_timeout_seconds=5),
        logger=logger,
        address=server.address,
        before_leasing=before_leasing,
    )
    runner = threading.Thread(target=loop.run)
    runner.start()
    try:
        with pytest.raises(queue.Empty):
            server.sidecar.next_stream(timeout=0.2)  # held by the hook
        release.set()
        server.sidecar.next_stream()
        assert seen == [(1, True)]
    finally:
        loop.stop()
        runner.join(WAIT)
        channels.close()
