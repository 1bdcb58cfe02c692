"""Raw-stub harness for emulator tests: an in-process server, stubs bound to a task hub, and stream readers."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2, wrappers_pb2

from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc


class HubStub:
    """A TaskHubSidecarService stub that sends one task hub's metadata on every call."""

    def __init__(self, channel: grpc.Channel, hub: str) -> None:
        self._stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        self.hub = hub

    def __getattr__(self, rpc: str) -> Any:
        method = getattr(self._stub, rpc)

        def call(request: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("metadata", [("taskhub", self.hub)])
            kwargs.setdefault("timeout", 10)
            return method(request, **kwargs)

        return call


class WorkStream:
    """Reads one GetWorkItems stream on a background thread so tests can take items with a timeout."""

    def __init__(self, stub: HubStub, request: pb.GetWorkItemsRequest | None = None, skip_pings: bool = True):
        self._call = stub._stub.GetWorkItems(request or pb.GetWorkItemsRequest(), metadata=[("taskhub", stub.hub)])
        self._items: queue.Queue[pb.WorkItem | BaseException] = queue.Queue()
        self._skip_pings = skip_pings
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        try:
            for item in self._call:
                self._items.put(item)
        except BaseException as error:  # the stream ending is reported to whoever waits next
            self._items.put(error)

    def next(self, timeout: float = 5.0) -> pb.WorkItem:
        deadline = time.monotonic() + timeout
        while True:
            item = self._items.get(timeout=max(0.0, deadline - time.monotonic()))
            if isinstance(item, BaseException):
                raise item
            if self._skip_pings and item.HasField("healthPing"):
                continue
            return item

    def nothing_for(self, seconds: float = 0.3) -> bool:
        """True if no work item arrives within ``seconds`` (a bounded negative check)."""
        try:
            self.next(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def cancel(self) -> None:
        self._call.cancel()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def server(clock: ManualClock) -> Iterator[EmulatorServer]:
    srv = EmulatorServer(
        port=0,
        in_memory=True,
        task_hubs=("default", "alpha", "beta"),
        clock=clock,
        lease_timeout=30,
        health_ping_interval=0.2,
    )
    srv.start()
    yield srv
    srv.close()


@pytest.fixture
def channel(server: EmulatorServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.address) as ch:
        yield ch


@pytest.fixture
def stub(channel: grpc.Channel) -> HubStub:
    return HubStub(channel, "default")


def uid(prefix: str = "i") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def sv(value: str) -> wrappers_pb2.StringValue:
    return wrappers_pb2.StringValue(value=value)


def ts(when: datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(when)
    return stamp


def start(stub: HubStub, name: str = "Orch", instance_id: str | None = None, **kwargs: Any) -> str:
    iid = instance_id or uid(name.lower())
    stub.StartInstance(pb.CreateInstanceRequest(instanceId=iid, name=name, **kwargs))
    return iid


def kinds(events: Any) -> list[str]:
    return [e.WhichOneof("eventType") for e in events]


def complete(stub: HubStub, item: pb.WorkItem, *actions: pb.OrchestratorAction, **kwargs: Any) -> None:
    stub.CompleteOrchestratorTask(
        pb.OrchestratorResponse(
            instanceId=item.orchestratorRequest.instanceId,
            completionToken=item.completionToken,
            actions=list(actions),
            **kwargs,
        )
    )


def schedule(action_id: int, name: str, data: str | None = None) -> pb.OrchestratorAction:
    return pb.OrchestratorAction(
        id=action_id, scheduleTask=pb.ScheduleTaskAction(name=name, input=sv(data) if data is not None else None)
    )


def finish(
    action_id: int, result: str | None = None, status: int = pb.ORCHESTRATION_STATUS_COMPLETED
) -> pb.OrchestratorAction:
    return pb.OrchestratorAction(
        id=action_id,
        completeOrchestration=pb.CompleteOrchestrationAction(
            orchestrationStatus=status,  # type: ignore[arg-type]
            result=sv(result) if result is not None else None,
        ),
    )


def timer(action_id: int, fire_at: datetime) -> pb.OrchestratorAction:
    return pb.OrchestratorAction(id=action_id, createTimer=pb.CreateTimerAction(fireAt=ts(fire_at)))


def status_of(stub: HubStub, iid: str) -> int:
    return int(stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).orchestrationState.orchestrationStatus)


def history(stub: HubStub, iid: str) -> list[pb.HistoryEvent]:
    chunks = stub.StreamInstanceHistory(pb.StreamInstanceHistoryRequest(instanceId=iid))
    return [e for chunk in chunks for e in chunk.events]


def later(clock: ManualClock, seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)


def peer_env() -> dict[str, str]:
    """Environment for the official SDK's interpreter: without our PYTHONPATH, so it imports its own package."""
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
