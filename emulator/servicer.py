"""The gRPC TaskHubSidecarService: translates RPCs to engine/dispatcher calls and maps errors in one place."""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
from google.protobuf import empty_pb2, wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from emulator import entity_ops, events, queries
from emulator.convert import entity_metadata, orchestration_state
from emulator.delivery import StartOptions
from emulator.dispatcher import Dispatcher
from emulator.engine import Engine
from emulator.entities import Entities
from emulator.errors import (
    EmulatorError,
    InvalidArgumentError,
)
from emulator.hubs import TaskHubs
from emulator.storage import InstanceRecord
from emulator.validation import Limits

log = logging.getLogger("emulator")
R = TypeVar("R")


def _status_code(error: Exception) -> grpc.StatusCode:
    if isinstance(error, EmulatorError):
        return getattr(grpc.StatusCode, error.code_name)  # type: ignore[no-any-return]
    if isinstance(error, TimeoutError):
        return grpc.StatusCode.DEADLINE_EXCEEDED
    return grpc.StatusCode.INTERNAL


def _mapped(method: Callable[..., R]) -> Callable[..., R]:
    """The one place emulator errors become gRPC status codes (unary methods)."""

    @functools.wraps(method)
    def wrapper(self: Servicer, request: Any, context: grpc.ServicerContext) -> R:
        try:
            return method(self, request, context)
        except (EmulatorError, TimeoutError) as error:
            context.abort(_status_code(error), str(error))
        except Exception as error:
            log.exception("unexpected error in %s", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")

    return wrapper


def _mapped_stream(method: Callable[..., Iterator[R]]) -> Callable[..., Iterator[R]]:
    @functools.wraps(method)
    def wrapper(self: Servicer, request: Any, context: grpc.ServicerContext) -> Iterator[R]:
        try:
            yield from method(self, request, context)
        except (EmulatorError, TimeoutError) as error:
            context.abort(_status_code(error), str(error))

    return wrapper


def _opt(message: Any, name: str) -> str | None:
    return getattr(message, name).value if message.HasField(name) else None


class Servicer(pb_grpc.TaskHubSidecarServiceServicer):  # type: ignore[misc]
    """Every RPC resolves the task hub, validates, delegates, and converts the result."""

    def __init__(
        self, engine: Engine, entities: Entities, dispatcher: Dispatcher, hubs: TaskHubs, limits: Limits
    ) -> None:
        self.engine = engine
        self.entities = entities
        self.dispatcher = dispatcher
        self.hubs = hubs
        self.limits = limits

    def _hub(self, context: grpc.ServicerContext) -> str:
        return self.hubs.resolve(context.invocation_metadata())

    def _state(self, record: InstanceRecord | None, with_payloads: bool) -> pb.GetInstanceResponse:
        if record is None:
            return pb.GetInstanceResponse(exists=False)
        return pb.GetInstanceResponse(exists=True, orchestrationState=orchestration_state(record, with_payloads))

    @_mapped
    def Hello(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        return empty_pb2.Empty()

    # Instance management ---------------------------------------------------------------------------
    @_mapped
    def StartInstance(
        self, request: pb.CreateInstanceRequest, context: grpc.ServicerContext
    ) -> pb.CreateInstanceResponse:
        hub = self._hub(context)
        instance_id = request.instanceId or uuid.uuid4().hex
        self.limits.instance_id(instance_id)
        if not request.name:
            raise InvalidArgumentError("name must not be empty")
        self.limits.payload("input", _opt(request, "input"))
        policy = request.orchestrationIdReusePolicy if request.HasField("orchestrationIdReusePolicy") else None
        opts = StartOptions(
            instance_id=instance_id,
            name=request.name,
            version=_opt(request, "version"),
            input=_opt(request, "input"),
            tags=dict(request.tags),
            scheduled_start=(
                events.to_datetime(request.scheduledStartTimestamp)
                if request.HasField("scheduledStartTimestamp")
                else None
            ),
            replaceable=list(policy.replaceableStatus) if policy is not None else None,
            execution_id=_opt(request, "executionId"),
            trace=request.parentTraceContext if request.HasField("parentTraceContext") else None,
        )
        return pb.CreateInstanceResponse(instanceId=self.engine.create(hub, opts))

    @_mapped
    def GetInstance(self, request: pb.GetInstanceRequest, context: grpc.ServicerContext) -> pb.GetInstanceResponse:
        return self._state(self.engine.get(self._hub(context), request.instanceId), request.getInputsAndOutputs)

    def _wait(
        self, request: pb.GetInstanceRequest, context: grpc.ServicerContext, done: Callable[[int], bool]
    ) -> pb.GetInstanceResponse:
        hub = self._hub(context)
        # A caller that goes away wakes only its own wait, not every waiter.
        context.add_callback(lambda: self.dispatcher.instance_changed(hub, request.instanceId))
        remaining = context.time_remaining()
        record = self.dispatcher.wait_for(hub, request.instanceId, done, remaining, context.is_active)
        return self._state(record, request.getInputsAndOutputs)

    @_mapped
    def WaitForInstanceStart(
        self, request: pb.GetInstanceRequest, context: grpc.ServicerContext
    ) -> pb.GetInstanceResponse:
        return self._wait(request, context, lambda status: status != pb.ORCHESTRATION_STATUS_PENDING)

    @_mapped
    def WaitForInstanceCompletion(
        self, request: pb.GetInstanceRequest, context: grpc.ServicerContext
    ) -> pb.GetInstanceResponse:
        return self._wait(request, context, lambda status: status in events.TERMINAL_STATUSES)

    @_mapped
    def RaiseEvent(self, request: pb.RaiseEventRequest, context: grpc.ServicerContext) -> pb.RaiseEventResponse:
        hub = self._hub(context)
        if not request.name:
            raise InvalidArgumentError("name must not be empty")
        self.limits.payload("input", _opt(request, "input"))
        self.engine.raise_event(hub, request.instanceId, request.name, _opt(request, "input"))
        return pb.RaiseEventResponse()

    @_mapped
    def TerminateInstance(self, request: pb.TerminateRequest, context: grpc.ServicerContext) -> pb.TerminateResponse:
        hub = self._hub(context)
        self.limits.payload("output", _opt(request, "output"))
        self.engine.terminate(hub, request.instanceId, _opt(request, "output"), request.recursive)
        return pb.TerminateResponse()

    @_mapped
    def SuspendInstance(self, request: pb.SuspendRequest, context: grpc.ServicerContext) -> pb.SuspendResponse:
        self.engine.suspend(self._hub(context), request.instanceId, _opt(request, "reason"))
        return pb.SuspendResponse()

    @_mapped
    def ResumeInstance(self, request: pb.ResumeRequest, context: grpc.ServicerContext) -> pb.ResumeResponse:
        self.engine.suspend(self._hub(context), request.instanceId, _opt(request, "reason"), resume=True)
        return pb.ResumeResponse()

    @_mapped
    def QueryInstances(
        self, request: pb.QueryInstancesRequest, context: grpc.ServicerContext
    ) -> pb.QueryInstancesResponse:
        return queries.query_instances(self.engine, self._hub(context), request.query)

    @_mapped
    def ListInstanceIds(
        self, request: pb.ListInstanceIdsRequest, context: grpc.ServicerContext
    ) -> pb.ListInstanceIdsResponse:
        return queries.list_instance_ids(self.engine, self._hub(context), request)

    @_mapped
    def PurgeInstances(
        self, request: pb.PurgeInstancesRequest, context: grpc.ServicerContext
    ) -> pb.PurgeInstancesResponse:
        count, complete = queries.purge(self.engine, self._hub(context), request)
        return pb.PurgeInstancesResponse(deletedInstanceCount=count, isComplete=wrappers_pb2.BoolValue(value=complete))

    @_mapped
    def RestartInstance(
        self, request: pb.RestartInstanceRequest, context: grpc.ServicerContext
    ) -> pb.RestartInstanceResponse:
        hub = self._hub(context)
        new_id = self.engine.restart(hub, request.instanceId, request.restartWithNewInstanceId)
        return pb.RestartInstanceResponse(instanceId=new_id)

    @_mapped
    def RewindInstance(
        self, request: pb.RewindInstanceRequest, context: grpc.ServicerContext
    ) -> pb.RewindInstanceResponse:
        self.engine.rewind(self._hub(context), request.instanceId, _opt(request, "reason"))
        return pb.RewindInstanceResponse()

    @_mapped_stream
    def StreamInstanceHistory(
        self, request: pb.StreamInstanceHistoryRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.HistoryChunk]:
        for chunk in self.engine.history_chunks(self._hub(context), request.instanceId):
            yield pb.HistoryChunk(events=chunk)

    @_mapped
    def SkipGracefulOrchestrationTerminations(
        self, request: pb.SkipGracefulOrchestrationTerminationsRequest, context: grpc.ServicerContext
    ) -> pb.SkipGracefulOrchestrationTerminationsResponse:
        hub = self._hub(context)
        ids = list(request.instanceBatch.instanceIds)
        skipped = self.engine.force_terminate(hub, ids, _opt(request, "reason"))
        return pb.SkipGracefulOrchestrationTerminationsResponse(unterminatedInstanceIds=skipped)

    # Work items ------------------------------------------------------------------------------------
    @_mapped_stream
    def GetWorkItems(self, request: pb.GetWorkItemsRequest, context: grpc.ServicerContext) -> Iterator[pb.WorkItem]:
        hub = self._hub(context)
        context.add_callback(self.dispatcher.wake)
        yield from self.dispatcher.stream(hub, request, context.is_active)

    @_mapped
    def CompleteActivityTask(
        self, request: pb.ActivityResponse, context: grpc.ServicerContext
    ) -> pb.CompleteTaskResponse:
        hub = self._hub(context)
        self.limits.payload("result", _opt(request, "result"))
        self.dispatcher.complete_activity(hub, request)
        return pb.CompleteTaskResponse()

    @_mapped
    def CompleteOrchestratorTask(
        self, request: pb.OrchestratorResponse, context: grpc.ServicerContext
    ) -> pb.CompleteTaskResponse:
        hub = self._hub(context)
        self.limits.orchestrator_response(request)
        self.dispatcher.complete_orchestration(hub, request)
        return pb.CompleteTaskResponse()

    @_mapped
    def AbandonTaskActivityWorkItem(
        self, request: pb.AbandonActivityTaskRequest, context: grpc.ServicerContext
    ) -> pb.AbandonActivityTaskResponse:
        self.dispatcher.abandon(self._hub(context), request.completionToken, "activity")
        return pb.AbandonActivityTaskResponse()

    @_mapped
    def AbandonTaskOrchestratorWorkItem(
        self, request: pb.AbandonOrchestrationTaskRequest, context: grpc.ServicerContext
    ) -> pb.AbandonOrchestrationTaskResponse:
        self.dispatcher.abandon(self._hub(context), request.completionToken, "orchestration")
        return pb.AbandonOrchestrationTaskResponse()

    # Task hubs -------------------------------------------------------------------------------------
    @_mapped
    def CreateTaskHub(
        self, request: pb.CreateTaskHubRequest, context: grpc.ServicerContext
    ) -> pb.CreateTaskHubResponse:
        name = self.hubs.name_in(context.invocation_metadata())
        if request.recreateIfExists:
            self.dispatcher.forget_hub(name)
            self.hubs.delete(name)
        self.hubs.create(name)
        return pb.CreateTaskHubResponse()

    @_mapped
    def DeleteTaskHub(
        self, request: pb.DeleteTaskHubRequest, context: grpc.ServicerContext
    ) -> pb.DeleteTaskHubResponse:
        hub = self._hub(context)
        self.dispatcher.forget_hub(hub)
        self.hubs.delete(hub)
        self.dispatcher.wake()
        return pb.DeleteTaskHubResponse()

    # Entities --------------------------------------------------------------------------------------
    @_mapped
    def SignalEntity(self, request: pb.SignalEntityRequest, context: grpc.ServicerContext) -> pb.SignalEntityResponse:
        hub = self._hub(context)
        entity_ops.require_entity_id(request.instanceId)
        self.limits.payload("input", _opt(request, "input"))
        at = events.to_datetime(request.scheduledTime) if request.HasField("scheduledTime") else None
        self.entities.signal(hub, request.instanceId, request.name, _opt(request, "input"), request.requestId, at)
        return pb.SignalEntityResponse()

    @_mapped
    def GetEntity(self, request: pb.GetEntityRequest, context: grpc.ServicerContext) -> pb.GetEntityResponse:
        found = self.entities.get(self._hub(context), request.instanceId)
        if found is None:
            return pb.GetEntityResponse(exists=False)
        return pb.GetEntityResponse(exists=True, entity=entity_metadata(found, request.includeState))

    @_mapped
    def QueryEntities(
        self, request: pb.QueryEntitiesRequest, context: grpc.ServicerContext
    ) -> pb.QueryEntitiesResponse:
        return queries.query_entities(self.entities, self._hub(context), request.query)

    @_mapped
    def CleanEntityStorage(
        self, request: pb.CleanEntityStorageRequest, context: grpc.ServicerContext
    ) -> pb.CleanEntityStorageResponse:
        hub = self._hub(context)
        removed, released = self.entities.clean(hub, request.removeEmptyEntities, request.releaseOrphanedLocks)
        return pb.CleanEntityStorageResponse(emptyEntitiesRemoved=removed, orphanedLocksReleased=released)

    @_mapped
    def CompleteEntityTask(
        self, request: pb.EntityBatchResult, context: grpc.ServicerContext
    ) -> pb.CompleteTaskResponse:
        hub = self._hub(context)
        self.limits.payload("entityState", _opt(request, "entityState"))
        self.dispatcher.complete_entity(hub, request)
        return pb.CompleteTaskResponse()

    @_mapped
    def AbandonTaskEntityWorkItem(
        self, request: pb.AbandonEntityTaskRequest, context: grpc.ServicerContext
    ) -> pb.AbandonEntityTaskResponse:
        self.dispatcher.abandon(self._hub(context), request.completionToken, "entity")
        return pb.AbandonEntityTaskResponse()
