"""The emulator serves every call from one event loop: what that must never cost a caller."""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest
from google.protobuf import empty_pb2

from dtscale_emulator.ops import aio_loop
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.support.reliability import wait_until

from .conftest import HubStub, WorkStream, start


def test_bytes_that_are_not_the_request_message_are_refused_naming_the_type(channel: grpc.Channel) -> None:
    raw = channel.unary_unary("/TaskHubSidecarService/StartInstance", request_serializer=None)
    with pytest.raises(grpc.RpcError) as caught:
        raw(b"\xff\xff\xff", metadata=[("taskhub", "default")], timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "CreateInstanceRequest" in (caught.value.details() or "")


def test_open_waits_do_not_hold_up_other_calls(server: EmulatorServer, stub: HubStub) -> None:
    ids = [start(stub) for _ in range(20)]
    answers: list[int] = []
    waits = [threading.Thread(target=_wait_for_end, args=(stub, iid, answers), daemon=True) for iid in ids]
    for thread in waits:
        thread.start()
    # One instance each, so the server's count of waited-on instances shows every wait open on it.
    wait_until(lambda: len(server.dispatcher.waiters) == 20, 30, "twenty waits to be open on the server")
    for _ in range(20):
        stub.Hello(empty_pb2.Empty())
    # Twenty short calls were answered while twenty waits stayed open: none queued behind a wait.
    assert all(thread.is_alive() for thread in waits) and not answers
    assert len(server.dispatcher.waiters) == 20
    for iid in ids:
        stub.TerminateInstance(pb.TerminateRequest(instanceId=iid))
    for thread in waits:
        thread.join(10)
    assert answers == [pb.ORCHESTRATION_STATUS_TERMINATED] * 20


def _wait_for_end(stub: HubStub, instance_id: str, answers: list[int]) -> None:
    reply = stub.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId=instance_id), timeout=60)
    answers.append(reply.orchestrationState.orchestrationStatus)


def test_a_caller_that_gives_up_leaves_no_waiter_behind(server: EmulatorServer, stub: HubStub) -> None:
    iid = start(stub)
    for _ in range(5):
        with pytest.raises(grpc.RpcError):
            stub.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId=iid), timeout=0.2)
    wait_until(lambda: not server.dispatcher.waiters, 5, "the abandoned waits to be dropped")


def test_a_stream_whose_caller_leaves_hands_its_work_back(server: EmulatorServer, stub: HubStub) -> None:
    first = WorkStream(stub)
    iid = start(stub)
    item = first.next()
    assert item.orchestratorRequest.instanceId == iid
    first.cancel()
    second = WorkStream(stub)
    again = second.next(timeout=5)
    second.cancel()
    assert again.orchestratorRequest.instanceId == iid
    assert again.completionToken != item.completionToken


def test_several_servers_share_the_loop_and_stop_independently() -> None:
    one = EmulatorServer(port=0, in_memory=True).start()
    two = EmulatorServer(port=0, in_memory=True).start()
    try:
        one.stop()
        with grpc.insecure_channel(two.address) as channel:
            HubStub(channel, "default").Hello(empty_pb2.Empty())
        one.start()
        with grpc.insecure_channel(one.address) as channel:
            HubStub(channel, "default").Hello(empty_pb2.Empty())
    finally:
        one.close()
        two.close()


def test_the_loop_refuses_to_wait_for_itself() -> None:
    async def inner() -> None:
        return None

    async def outer() -> str:
        try:
            aio_loop.run(inner())
        except RuntimeError as error:
            return str(error)
        return "no error"

    assert "cannot wait for itself" in aio_loop.run(outer())


def test_a_wait_cut_short_by_a_restart_is_unavailable_not_a_deadline(server: EmulatorServer, stub: HubStub) -> None:
    iid = start(stub)
    outcome: list[grpc.StatusCode] = []

    def wait() -> None:
        with pytest.raises(grpc.RpcError) as caught:
            stub.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId=iid), timeout=60)
        outcome.append(caught.value.code())

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    wait_until(lambda: len(server.dispatcher.waiters) == 1, 10, "the wait to be open on the server")
    server.faults.goaway(grace=1.0)
    waiter.join(10)
    # UNAVAILABLE tells the caller to try again (the SDK does); DEADLINE_EXCEEDED would claim its time ran out.
    assert outcome == [grpc.StatusCode.UNAVAILABLE]


@pytest.mark.adversarial
def test_a_filter_purge_lets_other_calls_run_between_pages(
    server: EmulatorServer, stub: HubStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dtscale_emulator.engine import queries

    for _ in range(6):
        iid = start(stub)
        stub.TerminateInstance(pb.TerminateRequest(instanceId=iid))  # never started: terminated at once
    monkeypatch.setattr(queries, "PURGE_PAGE", 2)

    async def purge_beside_a_ticker() -> tuple[int, int]:
        ticks = 0
        purge = asyncio.ensure_future(
            queries.purge(
                server.engine,
                "default",
                pb.PurgeInstancesRequest(
                    purgeInstanceFilter=pb.PurgeInstanceFilter(runtimeStatus=[pb.ORCHESTRATION_STATUS_TERMINATED])
                ),
            )
        )
        while not purge.done():
            ticks += 1
            await asyncio.sleep(0)
        count, _ = purge.result()
        return count, ticks

    count, ticks = aio_loop.run(purge_beside_a_ticker())
    assert count == 6
    assert ticks >= 3  # the loop ran other work between the purge's pages


def test_reset_frees_the_room_its_leases_held(server: EmulatorServer, stub: HubStub) -> None:
    stream = WorkStream(stub, pb.GetWorkItemsRequest(maxConcurrentOrchestrationWorkItems=1))
    start(stub)
    stream.next()  # the stream is now full: one orchestration out
    server.reset()  # the leased instance is gone with everything else
    after = start(stub)
    item = stream.next(timeout=3)  # not held back by a lease on something that no longer exists
    stream.cancel()
    assert item.orchestratorRequest.instanceId == after


def test_a_manual_clock_does_not_keep_a_closed_server_alive() -> None:
    import gc
    import weakref

    from dtscale_emulator.ops.clock import ManualClock

    clock = ManualClock()
    server = EmulatorServer(port=0, in_memory=True, clock=clock).start()
    ref = weakref.ref(server.dispatcher)
    server.close()
    del server
    gc.collect()
    clock.advance(1)  # the old subscription must be harmless
    assert ref() is None


def test_recreating_a_task_hub_answers_its_waiters(server: EmulatorServer, channel: grpc.Channel) -> None:
    stub = HubStub(channel, "alpha")
    iid = start(stub)
    answers: list[bool] = []

    def wait() -> None:
        reply = stub.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId=iid), timeout=30)
        answers.append(reply.exists)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    wait_until(lambda: len(server.dispatcher.waiters) == 1, 30, "the wait to be open on the server")
    stub.CreateTaskHub(pb.CreateTaskHubRequest(recreateIfExists=True))
    waiter.join(3.0)  # well before the waits' own periodic re-read
    assert answers == [False]
