"""The gRPC TaskHubSidecarService: translates RPCs to engine/dispatcher calls and maps errors in one place."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

import grpc
from google.protobuf import empty_pb2
from google.protobuf.message import Message

from dtscale_emulator.dispatch import entity_waits
from dtscale_emulator.dispatch.dispatcher import WorkDispatcher
from dtscale_emulator.engine import entity_ops, events, queries
from dtscale_emulator.engine.delivery import StartOptions
from dtscale_emulator.engine.entities import Entities
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.engine.wire_states import entity_metadata, orchestration_state
from dtscale_emulator.engine.work import ARRIVE, COMPLETE, COMPLETE_CHOICES, Interleaver
from dtscale_emulator.errors import (
    EmulatorError,
    InvalidArgumentError,
)
from dtscale_emulator.limits import Limits, RefusedContentError, reuse_policy
from dtscale_emulator.ops.faults import FaultInjector
from dtscale_emulator.protocol import BoolValue, Empty, pb, pb_grpc
from dtscale_emulator.protocol.extensions import ENTITY_VERSION
from dtscale_emulator.rpc.hubs import TaskHubs
from dtscale_emulator.rpc.methods import Undecodable
from dtscale_emulator.storage import InstanceRecord
from dtscale_emulator.storage.group_commit import track_call

log = logging.getLogger("dtscale_emulator")
R = TypeVar("R")
#: What every handler receives: the call's context on the server's event loop.
Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


def _status_code(error: Exception) -> grpc.StatusCode:
    if isinstance(error, EmulatorError):
        return getattr(grpc.StatusCode, error.code_name)  # type: ignore[no-any-return]
    if isinstance(error, TimeoutError):
        return grpc.StatusCode.DEADLINE_EXCEEDED
    return grpc.StatusCode.INTERNAL


#: Requests whose fields are checked against the limits elsewhere: a completion over a limit fails its work
#: instead of being refused (the dispatcher), and a work-item stream's filters are no data to store.
_CHECKED_ELSEWHERE = frozenset(
    {"CompleteOrchestratorTask", "CompleteActivityTask", "CompleteEntityTask", "GetWorkItems"}
)
#: A turn with more actions than this, or more bytes, is applied on a thread of its own: applied on the event
#: loop, it kept every other call (a Hello, another worker's completion) waiting until it had committed.
LARGE_TURN_ACTIONS = 256
LARGE_TURN_BYTES = 256 * 1024
_TURNS = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="emulator-turns")


#: Calls that never wait for room among the commits not yet on disk: a health probe, and the work-item stream
#: (its items wait, each, for the commits they rest on).
_NO_ROOM_WAIT = frozenset({"Hello", "GetWorkItems"})


def _mapped(method: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """The one place emulator errors become gRPC status codes; every request's fields meet the limits here.

    It is also where an answer waits for the disk: a call is answered once the commits it made, and those it may
    have read, are synced (``--durability full``'s group commit; at once otherwise).
    """
    checked = method.__name__ not in _CHECKED_ELSEWHERE
    waits_for_room = method.__name__ not in _NO_ROOM_WAIT

    @functools.wraps(method)
    async def wrapper(self: Servicer, request: Any, context: Context) -> R:
        try:
            if isinstance(request, Undecodable):
                raise InvalidArgumentError(f"the request is not a valid {request.type_name} message: {request.problem}")
            if checked and isinstance(request, Message):  # extensions sharing this wrapper take raw bytes
                self.limits.message(request)
            backend = self.dispatcher.engine.backend  # the servicer's and the protocol extensions' store
            if waits_for_room:
                await backend.room()
            needs = track_call()
            response = await method(self, request, context)
            if needs.made or needs.seen:
                await backend.durable(needs.made, needs.seen)
            return response
        except grpc.aio.AbortError:
            raise  # already a status (a refused or cut call)
        except (EmulatorError, TimeoutError) as error:
            await context.abort(_status_code(error), str(error))
        except Exception:
            # The caller learns only an ID: the exception's text can hold SQL, file paths or data from other
            # callers. The server log has the whole story under the same ID.
            error_id = uuid.uuid4().hex[:12]
            log.exception("error %s: unexpected error in %s", error_id, method.__name__)
            await context.abort(
                grpc.StatusCode.INTERNAL,
                f"internal error in the emulator (error {error_id}; the server log has the details)",
            )
        raise AssertionError("abort returned")  # pragma: no cover - abort always raises

    return wrapper


def _failure_refused(response: pb.ActivityResponse, error: RefusedContentError) -> pb.ActivityResponse:
    """An activity's failure in place of one over a limit: what the limit is, and how the original began."""
    original = response.failureDetails
    details = pb.TaskFailureDetails(
        errorType=error.failure_type,
        errorMessage=(
            f"the activity failed ({original.errorType[:200]}: {original.errorMessage[:1000]}), and its failure "
            f"details were refused by the emulator: {error}"
        ),
        isNonRetriable=original.isNonRetriable,
    )
    return pb.ActivityResponse(
        instanceId=response.instanceId,
        taskId=response.taskId,
        completionToken=response.completionToken,
        failureDetails=details,
    )


def _opt(message: Any, name: str) -> str | None:
    return getattr(message, name).value if message.HasField(name) else None


class Servicer(pb_grpc.TaskHubSidecarServiceServicer):  # type: ignore[misc]
    """Every RPC resolves the task hub, validates, delegates, and converts the result."""

    def __init__(
        self,
        engine: Engine,
        entities: Entities,
        dispatcher: WorkDispatcher,
        hubs: TaskHubs,
        limits: Limits,
        faults: FaultInjector,
    ) -> None:
        self.faults = faults
        self.engine = engine
        self.entities = entities
        self.dispatcher = dispatcher
        self.hubs = hubs
        self.limits = limits
        self.interleaver: Interleaver | None = dispatcher.interleaver

    async def _interleaved_completion(self, interleaver: Interleaver, token: str, apply: Callable[[], None]) -> None:
        """Applies a completion after other work had its chance: its lease may have ended first (another stream
        can take the work meanwhile), or the worker may send it again once it has landed."""
        key = self.dispatcher.lease_key(token)
        if key is None:
            apply()  # refused as stale, as without an interleaver
            return
        await interleaver.pause(COMPLETE, key)
        choice = interleaver.choose(COMPLETE, key, COMPLETE_CHOICES)
        if choice == "expire":
            self.dispatcher.expire(token)
            await interleaver.pause(COMPLETE, key)
        apply()
        if choice == "repeat":
            # A retry of a completion that has landed: refused, since its lease is over.
            with contextlib.suppress(EmulatorError):
                apply()

    def _hub(self, context: Context) -> str:
        return self.hubs.resolve(context.invocation_metadata() or ())

    def _state(self, record: InstanceRecord | None, with_payloads: bool) -> pb.GetInstanceResponse:
        if record is None:
            return pb.GetInstanceResponse(exists=False)
        return pb.GetInstanceResponse(exists=True, orchestrationState=orchestration_state(record, with_payloads))

    @_mapped
    async def Hello(self, request: empty_pb2.Empty, context: Context) -> empty_pb2.Empty:
        return Empty()

    # Instance management ---------------------------------------------------------------------------
    @_mapped
    async def StartInstance(self, request: pb.CreateInstanceRequest, context: Context) -> pb.CreateInstanceResponse:
        hub = self._hub(context)
        instance_id = request.instanceId or uuid.uuid4().hex
        self.limits.instance_id(instance_id)
        if not request.name:
            raise InvalidArgumentError("name must not be empty")
        self.limits.payload("input", _opt(request, "input"))
        policy = request.orchestrationIdReusePolicy if request.HasField("orchestrationIdReusePolicy") else None
        if policy is not None:
            reuse_policy(policy.replaceableStatus)
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
    async def GetInstance(self, request: pb.GetInstanceRequest, context: Context) -> pb.GetInstanceResponse:
        return self._state(self.engine.get(self._hub(context), request.instanceId), request.getInputsAndOutputs)

    async def _wait(
        self, request: pb.GetInstanceRequest, context: Context, done: Callable[[int], bool]
    ) -> pb.GetInstanceResponse:
        hub = self._hub(context)
        # A caller that goes away cancels this coroutine, which ends the wait at once.
        remaining = context.time_remaining()
        record = await self.dispatcher.wait_for(hub, request.instanceId, done, remaining, lambda: not context.done())
        return self._state(record, request.getInputsAndOutputs)

    @_mapped
    async def WaitForInstanceStart(self, request: pb.GetInstanceRequest, context: Context) -> pb.GetInstanceResponse:
        return await self._wait(request, context, lambda status: status != pb.ORCHESTRATION_STATUS_PENDING)

    @_mapped
    async def WaitForInstanceCompletion(
        self, request: pb.GetInstanceRequest, context: Context
    ) -> pb.GetInstanceResponse:
        return await self._wait(request, context, lambda status: status in events.TERMINAL_STATUSES)

    @_mapped
    async def RaiseEvent(self, request: pb.RaiseEventRequest, context: Context) -> pb.RaiseEventResponse:
        hub = self._hub(context)
        if not request.name:
            raise InvalidArgumentError("name must not be empty")
        self.limits.payload("input", _opt(request, "input"))
        if self.interleaver is not None:
            await self.interleaver.pause(ARRIVE, request.instanceId)
        self.engine.raise_event(hub, request.instanceId, request.name, _opt(request, "input"))
        return pb.RaiseEventResponse()

    @_mapped
    async def TerminateInstance(self, request: pb.TerminateRequest, context: Context) -> pb.TerminateResponse:
        hub = self._hub(context)
        self.limits.payload("output", _opt(request, "output"))
        if self.interleaver is not None:
            await self.interleaver.pause(ARRIVE, request.instanceId)
        self.engine.terminate(hub, request.instanceId, _opt(request, "output"), request.recursive)
        return pb.TerminateResponse()

    @_mapped
    async def SuspendInstance(self, request: pb.SuspendRequest, context: Context) -> pb.SuspendResponse:
        if self.interleaver is not None:
            await self.interleaver.pause(ARRIVE, request.instanceId)
        self.engine.suspend(self._hub(context), request.instanceId, _opt(request, "reason"))
        return pb.SuspendResponse()

    @_mapped
    async def ResumeInstance(self, request: pb.ResumeRequest, context: Context) -> pb.ResumeResponse:
        if self.interleaver is not None:
            await self.interleaver.pause(ARRIVE, request.instanceId)
        self.engine.suspend(self._hub(context), request.instanceId, _opt(request, "reason"), resume=True)
        return pb.ResumeResponse()

    @_mapped
    async def QueryInstances(self, request: pb.QueryInstancesRequest, context: Context) -> pb.QueryInstancesResponse:
        hub = self._hub(context)
        return await queries.storage_step(lambda: queries.query_instances(self.engine, hub, request.query))

    @_mapped
    async def ListInstanceIds(self, request: pb.ListInstanceIdsRequest, context: Context) -> pb.ListInstanceIdsResponse:
        hub = self._hub(context)
        return await queries.storage_step(lambda: queries.list_instance_ids(self.engine, hub, request))

    @_mapped
    async def PurgeInstances(self, request: pb.PurgeInstancesRequest, context: Context) -> pb.PurgeInstancesResponse:
        count, complete = await queries.purge(self.engine, self._hub(context), request)
        return pb.PurgeInstancesResponse(deletedInstanceCount=count, isComplete=BoolValue(value=complete))

    @_mapped
    async def RestartInstance(self, request: pb.RestartInstanceRequest, context: Context) -> pb.RestartInstanceResponse:
        hub = self._hub(context)
        new_id = self.engine.restart(hub, request.instanceId, request.restartWithNewInstanceId)
        return pb.RestartInstanceResponse(instanceId=new_id)

    @_mapped
    async def RewindInstance(self, request: pb.RewindInstanceRequest, context: Context) -> pb.RewindInstanceResponse:
        if self.interleaver is not None:
            await self.interleaver.pause(ARRIVE, request.instanceId)
        self.engine.rewind(self._hub(context), request.instanceId, _opt(request, "reason"))
        return pb.RewindInstanceResponse()

    @_mapped
    async def StreamInstanceHistory(self, request: pb.StreamInstanceHistoryRequest, context: Context) -> None:
        for chunk in self.engine.history_chunks(self._hub(context), request.instanceId):
            await context.write(pb.HistoryChunk(events=chunk))

    @_mapped
    async def SkipGracefulOrchestrationTerminations(
        self, request: pb.SkipGracefulOrchestrationTerminationsRequest, context: Context
    ) -> pb.SkipGracefulOrchestrationTerminationsResponse:
        hub = self._hub(context)
        ids = list(request.instanceBatch.instanceIds)
        skipped = self.engine.force_terminate(hub, ids, _opt(request, "reason"))
        return pb.SkipGracefulOrchestrationTerminationsResponse(unterminatedInstanceIds=skipped)

    # Work items ------------------------------------------------------------------------------------
    @_mapped
    async def GetWorkItems(self, request: pb.GetWorkItemsRequest, context: Context) -> None:
        hub = self._hub(context)
        await self.faults.serve_stream(
            context, lambda send: self.dispatcher.serve(hub, request, lambda: not context.done(), send)
        )

    @_mapped
    async def CompleteActivityTask(self, request: pb.ActivityResponse, context: Context) -> pb.CompleteTaskResponse:
        await self.faults.before_completion(request, context, "activity")
        hub = self._hub(context)
        refused: RefusedContentError | None = None
        try:
            self.limits.activity_response(request)
        except RefusedContentError as error:
            # The activity failed already; it fails with a failure the emulator can store, naming the limit.
            refused, request = error, _failure_refused(request, error)
        if self.interleaver is None:
            self.dispatcher.complete_activity(hub, request)
        else:
            apply = functools.partial(self.dispatcher.complete_activity, hub, request)
            await self._interleaved_completion(self.interleaver, request.completionToken, apply)
        if refused is not None:
            raise refused
        return pb.CompleteTaskResponse()

    @_mapped
    async def CompleteOrchestratorTask(
        self, request: pb.OrchestratorResponse, context: Context
    ) -> pb.CompleteTaskResponse:
        await self.faults.before_completion(request, context, "orchestration")
        hub = self._hub(context)
        if self.interleaver is None and (
            len(request.actions) > LARGE_TURN_ACTIONS or request.ByteSize() > LARGE_TURN_BYTES
        ):
            # With the call's context: the turn's commit is one this call's answer waits for.
            await asyncio.get_running_loop().run_in_executor(
                _TURNS, contextvars.copy_context().run, self.dispatcher.complete_orchestration, hub, request
            )
        elif self.interleaver is None:
            self.dispatcher.complete_orchestration(hub, request)
        else:
            apply = functools.partial(self.dispatcher.complete_orchestration, hub, request)
            await self._interleaved_completion(self.interleaver, request.completionToken, apply)
        return pb.CompleteTaskResponse()

    @_mapped
    async def AbandonTaskActivityWorkItem(
        self, request: pb.AbandonActivityTaskRequest, context: Context
    ) -> pb.AbandonActivityTaskResponse:
        self.dispatcher.abandon(self._hub(context), request.completionToken, "activity")
        return pb.AbandonActivityTaskResponse()

    @_mapped
    async def AbandonTaskOrchestratorWorkItem(
        self, request: pb.AbandonOrchestrationTaskRequest, context: Context
    ) -> pb.AbandonOrchestrationTaskResponse:
        self.dispatcher.abandon(self._hub(context), request.completionToken, "orchestration")
        return pb.AbandonOrchestrationTaskResponse()

    # Task hubs -------------------------------------------------------------------------------------
    @_mapped
    async def CreateTaskHub(self, request: pb.CreateTaskHubRequest, context: Context) -> pb.CreateTaskHubResponse:
        name = self.hubs.name_in(context.invocation_metadata() or ())
        if request.recreateIfExists:
            self.dispatcher.forget_hub(name)
            await self.hubs.delete(name)
        self.hubs.create(name)
        if request.recreateIfExists:
            self.dispatcher.wake()  # waiters on the hub's old instances re-read them
        return pb.CreateTaskHubResponse()

    @_mapped
    async def DeleteTaskHub(self, request: pb.DeleteTaskHubRequest, context: Context) -> pb.DeleteTaskHubResponse:
        hub = self._hub(context)
        self.dispatcher.forget_hub(hub)
        await self.hubs.delete(hub)
        self.dispatcher.wake()
        return pb.DeleteTaskHubResponse()

    # Entities --------------------------------------------------------------------------------------
    @_mapped
    async def SignalEntity(self, request: pb.SignalEntityRequest, context: Context) -> pb.SignalEntityResponse:
        hub = self._hub(context)
        entity_ops.require_entity_id(request.instanceId)
        self.limits.entity_id(request.instanceId)
        self.limits.payload("input", _opt(request, "input"))
        at = events.to_datetime(request.scheduledTime) if request.HasField("scheduledTime") else None
        if self.interleaver is not None:
            await self.interleaver.pause(ARRIVE, request.instanceId)
        self.entities.signal(hub, request.instanceId, request.name, _opt(request, "input"), request.requestId, at)
        return pb.SignalEntityResponse()

    @_mapped
    async def GetEntity(self, request: pb.GetEntityRequest, context: Context) -> pb.GetEntityResponse:
        hub = self._hub(context)
        self.limits.entity_id(request.instanceId)
        hint = entity_waits.parse_hint(context.invocation_metadata() or ())
        held = hint is not None and await self.dispatcher.entity_waits.hold(
            hub,
            request.instanceId,
            hint,
            lambda: self._entity_state(hub, request.instanceId),
            lambda instance_id: self._ended(hub, instance_id),
            context.time_remaining(),
        )
        found = self.entities.get(hub, request.instanceId)
        if held:  # the caller learns that this backend holds reads, and the version to name in the next one
            version = entity_waits.version_of(None if found is None else found.record.state)
            context.set_trailing_metadata(((ENTITY_VERSION, version),))
        if found is None:
            return pb.GetEntityResponse(exists=False)
        return pb.GetEntityResponse(exists=True, entity=entity_metadata(found, request.includeState))

    def _ended(self, hub: str, instance_id: str) -> bool:
        record = self.engine.get(hub, instance_id)
        return record is None or record.status in events.TERMINAL_STATUSES

    def _entity_state(self, hub: str, entity_id: str) -> str | None:
        found = self.entities.get(hub, entity_id)
        return None if found is None else found.record.state

    @_mapped
    async def QueryEntities(self, request: pb.QueryEntitiesRequest, context: Context) -> pb.QueryEntitiesResponse:
        hub = self._hub(context)
        return await queries.storage_step(lambda: queries.query_entities(self.entities, hub, request.query))

    @_mapped
    async def CleanEntityStorage(
        self, request: pb.CleanEntityStorageRequest, context: Context
    ) -> pb.CleanEntityStorageResponse:
        hub = self._hub(context)
        return await queries.storage_step(lambda: queries.clean_entity_storage(self.entities, hub, request))

    @_mapped
    async def CompleteEntityTask(self, request: pb.EntityBatchResult, context: Context) -> pb.CompleteTaskResponse:
        await self.faults.before_completion(request, context, "entity")
        hub = self._hub(context)
        if self.interleaver is None:
            self.dispatcher.complete_entity(hub, request)
        else:
            apply = functools.partial(self.dispatcher.complete_entity, hub, request)
            await self._interleaved_completion(self.interleaver, request.completionToken, apply)
        return pb.CompleteTaskResponse()

    @_mapped
    async def AbandonTaskEntityWorkItem(
        self, request: pb.AbandonEntityTaskRequest, context: Context
    ) -> pb.AbandonEntityTaskResponse:
        self.dispatcher.abandon(self._hub(context), request.completionToken, "entity")
        return pb.AbandonEntityTaskResponse()
