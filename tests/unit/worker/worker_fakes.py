"""Test doubles for the worker: an in-process sidecar and a scripted orchestration executor."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import empty_pb2, wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

WAIT = 10.0  # generous bound for any single expected event; tests normally see it in milliseconds

END = object()  # make the server end the current stream


class Stream:
    """One GetWorkItems call as the server sees it; the test pushes what the server sends."""

    def __init__(self, request: pb.GetWorkItemsRequest) -> None:
        self.request = request
        self.outbox: queue.Queue[Any] = queue.Queue()
        self.closed = threading.Event()

    def send(self, item: pb.WorkItem) -> None:
        self.outbox.put(item)

    def end(self) -> None:
        self.outbox.put(END)


@dataclass
class Rejection:
    code: grpc.StatusCode
    details: str
    remaining: int = 1
    token: str | None = None  # only completions carrying this token (None: any)


class FakeSidecar(pb_grpc.TaskHubSidecarServiceServicer):
    """Records what the worker sends and lets the test script the work-item streams."""

    def __init__(self) -> None:
        self.hellos = 0
        self.streams: queue.Queue[Stream] = queue.Queue()
        self.completions: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.rejections: dict[str, Rejection] = {}
        self.hello_gate: Callable[[], None] | None = None
        self._lock = threading.Lock()

    # --- scripting helpers -------------------------------------------------------------------
    def next_stream(self, timeout: float = WAIT) -> Stream:
        return self.streams.get(timeout=timeout)

    def next_completion(self, timeout: float = WAIT) -> tuple[str, Any]:
        return self.completions.get(timeout=timeout)

    def reject(
        self, rpc: str, code: grpc.StatusCode, details: str, times: int = 1, token: str | None = None
    ) -> None:
        self.rejections[rpc] = Rejection(code, details, times, token)

    def _maybe_reject(self, rpc: str, context: grpc.ServicerContext, request: Any = None) -> None:
        with self._lock:
            rejection = self.rejections.get(rpc)
            if rejection is None or rejection.remaining <= 0:
                return
            if rejection.token is not None and getattr(request, "completionToken", None) != rejection.token:
                return
            rejection.remaining -= 1
        context.abort(rejection.code, rejection.details)

    # --- the service -------------------------------------------------------------------------
    def Hello(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        with self._lock:
            self.hellos += 1
        if self.hello_gate is not None:
            self.hello_gate()
        return empty_pb2.Empty()

    def GetWorkItems(self, request: pb.GetWorkItemsRequest, context: grpc.ServicerContext) -> Any:
        stream = Stream(request)
        context.add_callback(lambda: stream.outbox.put(END))
        self.streams.put(stream)
        try:
            while True:
                item = stream.outbox.get()
                if item is END:
                    return
                yield item
        finally:
            stream.closed.set()

    def _record(self, rpc: str, request: Any, context: grpc.ServicerContext, response: Any) -> Any:
        self._maybe_reject(rpc, context, request)
        self.completions.put((rpc, request))
        return response

    def CompleteActivityTask(self, request: pb.ActivityResponse, context: grpc.ServicerContext) -> Any:
        return self._record("CompleteActivityTask", request, context, pb.CompleteTaskResponse())

    def CompleteOrchestratorTask(self, request: pb.OrchestratorResponse, context: grpc.ServicerContext) -> Any:
        return self._record("CompleteOrchestratorTask", request, context, pb.CompleteTaskResponse())

    def CompleteEntityTask(self, request: pb.EntityBatchResult, context: grpc.ServicerContext) -> Any:
        return self._record("CompleteEntityTask", request, context, pb.CompleteTaskResponse())

    def AbandonTaskActivityWorkItem(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._record("AbandonTaskActivityWorkItem", request, context, pb.AbandonActivityTaskResponse())

    def AbandonTaskOrchestratorWorkItem(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._record("AbandonTaskOrchestratorWorkItem", request, context, pb.AbandonOrchestrationTaskResponse())

    def AbandonTaskEntityWorkItem(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._record("AbandonTaskEntityWorkItem", request, context, pb.AbandonEntityTaskResponse())


class Server:
    """A FakeSidecar served on an ephemeral local port."""

    def __init__(self) -> None:
        self.sidecar = FakeSidecar()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
        pb_grpc.add_TaskHubSidecarServiceServicer_to_server(self.sidecar, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=None).wait()


# --- work items -----------------------------------------------------------------------------------
def activity_item(
    name: str, payload: str | None = None, *, task_id: int = 1, instance_id: str = "inst", token: str = "tok"
) -> pb.WorkItem:
    request = pb.ActivityRequest(
        name=name, taskId=task_id, orchestrationInstance=pb.OrchestrationInstance(instanceId=instance_id)
    )
    if payload is not None:
        request.input.CopyFrom(wrappers_pb2.StringValue(value=payload))
    return pb.WorkItem(activityRequest=request, completionToken=token)


def orchestration_item(
    instance_id: str = "inst", *, name: str = "orch", version: str | None = None, token: str = "tok"
) -> pb.WorkItem:
    started = pb.ExecutionStartedEvent(
        name=name, orchestrationInstance=pb.OrchestrationInstance(instanceId=instance_id)
    )
    if version is not None:
        started.version.CopyFrom(wrappers_pb2.StringValue(value=version))
    events = [
        pb.HistoryEvent(eventId=-1, orchestratorStarted=pb.OrchestratorStartedEvent()),
        pb.HistoryEvent(eventId=-1, executionStarted=started),
    ]
    request = pb.OrchestratorRequest(instanceId=instance_id, newEvents=events)
    return pb.WorkItem(orchestratorRequest=request, completionToken=token)


def health_ping() -> pb.WorkItem:
    return pb.WorkItem(healthPing=pb.HealthPing())


# --- an executor that completes every orchestration with its instance id as output -----------------
@dataclass(frozen=True)
class FakeResult:
    actions: list[pb.OrchestratorAction]
    encoded_custom_status: str | None = None


@dataclass
class FakeExecutor:
    seen: list[str] = field(default_factory=list)
    custom_status: str | None = None
    gate: threading.Event | None = None

    def execute(
        self, instance_id: str, old_events: Sequence[pb.HistoryEvent], new_events: Sequence[pb.HistoryEvent]
    ) -> FakeResult:
        self.seen.append(instance_id)
        if self.gate is not None:
            self.gate.wait(WAIT)
        action = pb.OrchestratorAction(
            id=0,
            completeOrchestration=pb.CompleteOrchestrationAction(
                orchestrationStatus=pb.ORCHESTRATION_STATUS_COMPLETED,
                result=wrappers_pb2.StringValue(value=f'"{instance_id}"'),
            ),
        )
        return FakeResult([action], self.custom_status)
