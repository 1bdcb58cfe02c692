"""Every ready work item reaches a stream with room for it, without waiting for an unrelated change.

The servers here ping only every 15 s: a stream that wrongly concluded "nothing left" would sit idle
until then, far beyond the few seconds these tests wait.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import grpc
import pytest

from dtscale_emulator.ops import aio_loop
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from tests.support.reliability import wait_until

from .conftest import HubStub, WorkStream, complete, schedule, start, ts


@pytest.fixture
def stub() -> Iterator[HubStub]:
    server = EmulatorServer(port=0, in_memory=True, clock=ManualClock(), health_ping_interval=15.0).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield HubStub(channel, "default")
    finally:
        server.close()


def _caught_up(server: EmulatorServer, streams: int) -> None:
    """Waits until ``streams`` streams are open and each has looked for work after the latest change.

    From then on, a stream that was woken and would look for work has done so.
    """
    dispatcher = server.dispatcher
    wait_until(
        lambda: len(dispatcher.streams) == streams and dispatcher.streams_caught_up(),
        10,
        f"{streams} streams to wait for work, having looked after the latest change",
    )


def _take(stream: WorkStream, count: int, pick: str) -> list[str]:
    got: list[str] = []
    try:
        while len(got) < count:
            item = stream.next(timeout=3.0)
            got.append(getattr(item, pick).instanceId)
    except queue.Empty:
        pass
    finally:
        stream.cancel()
    return got


def test_several_ready_entities_are_all_delivered(stub: HubStub) -> None:
    for i in range(3):
        stub.SignalEntity(pb.SignalEntityRequest(instanceId=f"@counter@k{i}", name="add"))
    stream = WorkStream(stub, pb.GetWorkItemsRequest(maxConcurrentEntityWorkItems=10))
    assert sorted(_take(stream, 3, "entityRequestV2")) == ["@counter@k0", "@counter@k1", "@counter@k2"]


def test_an_instance_with_a_deep_queue_does_not_hide_another(stub: HubStub) -> None:
    busy = start(stub, instance_id="busy")
    for _ in range(150):  # more queued events than one candidate page reads
        stub.RaiseEvent(pb.RaiseEventRequest(instanceId=busy, name="e"))
    other = start(stub, instance_id="other")
    assert sorted(_take(WorkStream(stub), 2, "orchestratorRequest")) == [busy, other]


def test_an_orchestration_behind_many_filtered_out_ones_is_delivered(stub: HubStub) -> None:
    # Many instances the stream must not take, then one it may: they must not end the search.
    for i in range(80):
        start(stub, name="Noise", instance_id=f"noise-{i}")
    start(stub, name="Wanted", instance_id="wanted")
    request = pb.GetWorkItemsRequest(
        workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Wanted")])
    )
    assert _take(WorkStream(stub, request), 1, "orchestratorRequest") == ["wanted"]


def test_a_waiter_hears_of_an_instance_another_turn_terminated(stub: HubStub) -> None:
    later = start(stub, instance_id="later", scheduledStartTimestamp=ts(datetime(2030, 1, 1, tzinfo=timezone.utc)))
    answers: list[int] = []

    def wait() -> None:
        reply = stub.WaitForInstanceCompletion(pb.GetInstanceRequest(instanceId=later), timeout=30)
        answers.append(reply.orchestrationState.orchestrationStatus)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    killer = start(stub, instance_id="killer")
    stream = WorkStream(stub)
    item = stream.next()
    assert item.orchestratorRequest.instanceId == killer
    terminate = pb.OrchestratorAction(id=1, terminateOrchestration=pb.TerminateOrchestrationAction(instanceId=later))
    complete(stub, item, terminate)
    waiter.join(3.0)  # well before the waiters' own periodic re-read
    stream.cancel()
    assert answers == [pb.ORCHESTRATION_STATUS_TERMINATED]


# For the tests that count the streams' looks: no health ping falls due during the test, so every look
# is one that a change caused.
NO_PINGS = 3600.0


def _orchestration_looks(server: EmulatorServer) -> list[str]:
    """The task hub of every look for orchestration work from now on, in order."""
    looked: list[str] = []
    lease = server.engine.lease_orchestrations

    def counting(hub: str, *args: Any) -> Any:
        looked.append(hub)
        return lease(hub, *args)

    server.engine.lease_orchestrations = counting  # type: ignore[method-assign]
    return looked


def test_a_stream_is_behind_from_a_change_until_it_has_looked_again() -> None:
    server = EmulatorServer(port=0, in_memory=True, health_ping_interval=NO_PINGS).start()
    looked = _orchestration_looks(server)

    async def change() -> bool:
        # On the loop, so the woken stream cannot run before the answer is read.
        server.dispatcher.work_changed("default", ("orchestration",))
        return server.dispatcher.streams_caught_up()

    try:
        with grpc.insecure_channel(server.address) as channel:
            stream = WorkStream(HubStub(channel, "default"))
            _caught_up(server, 1)
            assert looked == ["default"]
            assert aio_loop.run(change()) is False
            _caught_up(server, 1)
            assert looked == ["default", "default"]  # caught up again only once it had looked
            stream.cancel()
    finally:
        server.close()


def test_specialist_streams_do_not_look_for_work_made_for_other_names() -> None:
    server = EmulatorServer(port=0, in_memory=True, health_ping_interval=NO_PINGS).start()
    looked: list[str] = []
    lease = server.engine.lease_activities

    def counting(hub: str, accept: Any, *args: Any) -> Any:
        looked.append(",".join(accept.names() or ["*"]))
        return lease(hub, accept, *args)

    server.engine.lease_activities = counting  # type: ignore[method-assign]
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = HubStub(channel, "default")
            def only(name: str) -> pb.GetWorkItemsRequest:
                return pb.GetWorkItemsRequest(
                    workItemFilters=pb.WorkItemFilters(activities=[pb.ActivityFilter(name=name)])
                )

            specialists = {name: WorkStream(stub, only(name)) for name in ("A", "B", "C", "D", "E")}
            orchestrators = WorkStream(
                stub,
                pb.GetWorkItemsRequest(
                    workItemFilters=pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name="Orch")])
                ),
            )
            # Every stream has looked once, found nothing, and waits.
            _caught_up(server, 6)
            assert set(looked) == {"A", "B", "C", "D", "E", "*"}
            looked.clear()
            for i in range(5):
                start(stub, instance_id=f"job-{i}")
                complete(stub, orchestrators.next(), schedule(1, "C"))
                assert specialists["C"].next().activityRequest.name == "C"
            # The "C" worker goes away holding all five: they are offered again, to "C" streams only.
            specialists["C"].cancel()
            specialists["C"] = WorkStream(stub, only("C"))
            assert sorted(specialists["C"].next().activityRequest.name for _ in range(5)) == ["C"] * 5
            _caught_up(server, 6)  # the old "C" stream is gone; a wrongly woken stream has looked by now
            seen = set(looked)
            for stream in (*specialists.values(), orchestrators):
                stream.cancel()
    finally:
        server.close()
    # Only the streams that take "C" looked for the five activities and their redelivery; the others never
    # queried, not even when a stream vanished.
    assert seen == {"C"}


def test_streams_do_not_look_for_work_made_in_another_task_hub() -> None:
    server = EmulatorServer(port=0, in_memory=True, task_hubs=("busy", "quiet"), health_ping_interval=NO_PINGS).start()
    looked = _orchestration_looks(server)
    try:
        with grpc.insecure_channel(server.address) as channel:
            busy, quiet = HubStub(channel, "busy"), HubStub(channel, "quiet")
            worker, bystander = WorkStream(busy), WorkStream(quiet)
            _caught_up(server, 2)  # both streams have looked once, found nothing, and wait
            assert set(looked) == {"busy", "quiet"}
            looked.clear()
            for i in range(5):
                start(busy, instance_id=f"job-{i}")
                assert worker.next().orchestratorRequest.instanceId == f"job-{i}"
            _caught_up(server, 2)  # had the bystander been woken for these, it would have looked by now
            worker.cancel()
            bystander.cancel()
    finally:
        server.close()
    assert "quiet" not in looked and "busy" in looked


def test_abandoning_a_replaced_instance_frees_the_full_streams_slot_at_once() -> None:
    server = EmulatorServer(port=0, in_memory=True, health_ping_interval=15.0).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = HubStub(channel, "default")
            stream = WorkStream(stub, pb.GetWorkItemsRequest(maxConcurrentOrchestrationWorkItems=1))
            start(stub, instance_id="x")
            first = stream.next()
            # Replacing the running instance clears its lease in storage, so releasing that lease finds nothing.
            replace = pb.OrchestrationIdReusePolicy(
                replaceableStatus=[
                    pb.ORCHESTRATION_STATUS_PENDING,
                    pb.ORCHESTRATION_STATUS_RUNNING,
                    pb.ORCHESTRATION_STATUS_TERMINATED,
                ]
            )
            start(stub, instance_id="x", orchestrationIdReusePolicy=replace)
            stub.AbandonTaskOrchestratorWorkItem(pb.AbandonOrchestrationTaskRequest(completionToken=first.completionToken))
            # The stream had no room; the abandon gave it back, so it takes the new run now, not at its next ping.
            assert stream.next(timeout=5).orchestratorRequest.instanceId == "x"
            stream.cancel()
    finally:
        server.close()
