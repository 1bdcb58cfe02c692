"""Every ready work item reaches a stream with room for it, without waiting for an unrelated change.

The servers here ping only every 15 s: a stream that wrongly concluded "nothing left" would sit idle
until then, far beyond the few seconds these tests wait.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import grpc
import pytest

from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, WorkStream, complete, schedule, start, ts


@pytest.fixture
def stub() -> Iterator[HubStub]:
    server = EmulatorServer(port=0, in_memory=True, clock=ManualClock(), health_ping_interval=15.0).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield HubStub(channel, "default")
    finally:
        server.close()


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


def test_specialist_streams_do_not_look_for_work_made_for_other_names() -> None:
    server = EmulatorServer(port=0, in_memory=True, health_ping_interval=15.0).start()
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
            # Wait until every stream has looked once and found nothing (a fixed sleep is too short under load).
            deadline = time.monotonic() + 10.0
            while set(looked) != {"A", "B", "C", "D", "E", "*"} and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.1)
            looked.clear()
            for i in range(5):
                start(stub, instance_id=f"job-{i}")
                complete(stub, orchestrators.next(), schedule(1, "C"))
                assert specialists["C"].next().activityRequest.name == "C"
            # The "C" worker goes away holding all five: they are offered again, to "C" streams only.
            specialists["C"].cancel()
            specialists["C"] = WorkStream(stub, only("C"))
            assert sorted(specialists["C"].next().activityRequest.name for _ in range(5)) == ["C"] * 5
            time.sleep(0.2)  # time enough for a wrongly woken stream to have looked
            seen = set(looked)
            for stream in (*specialists.values(), orchestrators):
                stream.cancel()
    finally:
        server.close()
    # Only the streams that take "C" looked for the five activities and their redelivery; the others never
    # queried, not even when a stream vanished.
    assert seen == {"C"}


def test_streams_do_not_look_for_work_made_in_another_task_hub() -> None:
    server = EmulatorServer(port=0, in_memory=True, task_hubs=("busy", "quiet"), health_ping_interval=15.0).start()
    looked: list[str] = []
    lease = server.engine.lease_orchestrations

    def counting(hub: str, *args: Any) -> Any:
        looked.append(hub)
        return lease(hub, *args)

    server.engine.lease_orchestrations = counting  # type: ignore[method-assign]
    try:
        with grpc.insecure_channel(server.address) as channel:
            busy, quiet = HubStub(channel, "busy"), HubStub(channel, "quiet")
            worker, bystander = WorkStream(busy), WorkStream(quiet)
            time.sleep(0.3)  # both streams have looked once and found nothing
            looked.clear()
            for i in range(5):
                start(busy, instance_id=f"job-{i}")
                assert worker.next().orchestratorRequest.instanceId == f"job-{i}"
            worker.cancel()
            bystander.cancel()
    finally:
        server.close()
    assert "quiet" not in looked


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
