"""Routing each received work item to its runner, in a concurrency slot, and completing it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from durabletask._errors import exception_message
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._worker.activity_runner import ActivityRunner
from durabletask._worker.completions import CompletionSender
from durabletask._worker.dispatch import WorkItemPools, WorkKind
from durabletask._worker.entity_batches import EntityBatchRunner, as_batch, entity_name, unregistered_result
from durabletask._worker.entity_runner import EntityRunner
from durabletask._worker.orchestration_runner import OrchestrationRunner
from durabletask._worker.streams import built_in_entity

Stub = Any  # pb_grpc.TaskHubSidecarServiceStub; its generated methods are untyped.


def _then_async(
    job: Callable[[], Coroutine[Any, Any, None]], done: Callable[[], None]
) -> Callable[[], Coroutine[Any, Any, None]]:
    async def run() -> None:
        try:
            await job()
        finally:
            done()

    return run


def _failure_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {exception_message(error)}"


class WorkItemHandler:
    """Called by the stream loop for each work item; blocks only while the item's kind is at its limit.

    Entity batches for registered entities go to ``entities`` (by default an :class:`EntityRunner`
    over ``registry``); operations on entities with no code here fail.
    """

    def __init__(
        self,
        pools: WorkItemPools,
        orchestrations: OrchestrationRunner,
        activities: ActivityRunner,
        sender: CompletionSender,
        *,
        registry: Registry,
        logger: logging.Logger,
        entities: EntityBatchRunner | None = None,
    ) -> None:
        self._registry = registry
        self._entities: EntityBatchRunner = entities if entities is not None else EntityRunner(registry, logger=logger)
        self._pools = pools
        self._orchestrations = orchestrations
        self._activities = activities
        self._sender = sender
        self._logger = logger

    def __call__(self, item: pb.WorkItem, stub: Stub, done: Callable[[], None]) -> None:
        """Dispatch ``item``; ``done`` is called once nothing will use ``stub`` for it any more."""
        kind = item.WhichOneof("request")
        handed_off = False  # True once a job owns calling done()
        try:
            if kind == "healthPing":
                return
            if kind == "orchestratorRequest":
                handed_off = self._orchestration(item.orchestratorRequest, item.completionToken, stub, done)
            elif kind == "activityRequest":
                handed_off = self._activity(item.activityRequest, item.completionToken, stub, done)
            elif kind in ("entityRequest", "entityRequestV2"):
                handed_off = self._entity(item, stub, done)
            else:
                self._logger.warning("ignoring a work item of unknown kind %r", kind)
        except Exception:
            # One bad work item must never end the stream; its lease expires and it is redelivered.
            self._logger.exception("could not dispatch a %s work item", kind)
        finally:
            if not handed_off:
                done()

    def _orchestration(self, request: pb.OrchestratorRequest, token: str, stub: Stub, done: Callable[[], None]) -> bool:
        if not self._pools.acquire(WorkKind.ORCHESTRATION):
            self._abandon_orchestration(request.instanceId, token, stub, "the worker is stopping")
            return False

        def job() -> None:
            outcome = self._orchestrations.run(request, token)
            if outcome.response is None:
                self._abandon_orchestration(request.instanceId, token, stub, outcome.reason)
                return
            self._sender.send(
                f"the orchestration result for '{request.instanceId}'",
                lambda: stub.CompleteOrchestratorTask(outcome.response, timeout=self._sender.timeout),
            )

        def hand_back(error: BaseException) -> None:
            reason = f"it could not be run ({_failure_line(error)})"
            self._abandon_orchestration(request.instanceId, token, stub, reason)

        what = f"orchestration '{request.instanceId}'"
        self._pools.submit(WorkKind.ORCHESTRATION, self._settled(job, hand_back, what, done), what=what)
        return True

    def _settled(
        self, job: Callable[[], None], hand_back: Callable[[BaseException], None], what: str, done: Callable[[], None]
    ) -> Callable[[], None]:
        """``job``, made to end its work item whatever escapes it: a completion, or else an abandonment.

        The runners turn what user code raises into failure details; this catches what they could not (a bug,
        an error while reporting an error), which would otherwise leave the work item leased until its lease
        ran out, holding the backend's slot for it, and then be redelivered to fail the same way. ``done`` is
        called last, whatever happened.
        """

        def run() -> None:
            try:
                job()
            except BaseException as error:  # see the docstring
                self._logger.error("handing back %s: %s", what, _failure_line(error), exc_info=error)
                hand_back(error)
            finally:
                done()

        return run

    def _abandon_orchestration(self, instance_id: str, token: str, stub: Stub, reason: str) -> None:
        self._logger.info("handing back the orchestration work item for '%s': %s", instance_id, reason)
        self._sender.send(
            f"the abandonment of '{instance_id}'",
            lambda: stub.AbandonTaskOrchestratorWorkItem(
                pb.AbandonOrchestrationTaskRequest(completionToken=token), timeout=self._sender.timeout
            ),
        )

    def _activity(self, request: pb.ActivityRequest, token: str, stub: Stub, done: Callable[[], None]) -> bool:
        instance_id = request.orchestrationInstance.instanceId
        running = f"activity '{request.name}' (task {request.taskId}) of orchestration '{instance_id}'"
        what = f"the result of activity '{request.name}#{request.taskId}' for '{instance_id}'"

        def hand_back(_: BaseException | None = None) -> None:
            self._sender.send(
                f"the abandonment of {what}",
                lambda: stub.AbandonTaskActivityWorkItem(
                    pb.AbandonActivityTaskRequest(completionToken=token), timeout=self._sender.timeout
                ),
            )

        if not self._pools.acquire(WorkKind.ACTIVITY):
            hand_back()
            return False

        def complete(response: pb.ActivityResponse) -> None:
            self._sender.send(what, lambda: stub.CompleteActivityTask(response, timeout=self._sender.timeout))

        if self._activities.is_async(request):

            async def async_job() -> None:
                try:
                    response = await self._activities.run_async(request, token)
                except BaseException as error:  # as in _settled, and never out into the loop
                    self._logger.error("handing back %s: %s", running, _failure_line(error), exc_info=error)
                    await self._pools.run_blocking(hand_back)
                    return
                await self._pools.run_blocking(lambda: complete(response))

            self._pools.submit_async(WorkKind.ACTIVITY, _then_async(async_job, done), what=running)
        else:
            job = self._settled(lambda: complete(self._activities.run(request, token)), hand_back, running, done)
            self._pools.submit(WorkKind.ACTIVITY, job, what=running)
        return True

    def _entity(self, item: pb.WorkItem, stub: Stub, done: Callable[[], None]) -> bool:
        batch, infos = as_batch(item)
        name = entity_name(batch.instanceId)
        registered = name is not None and (self._registry.get_entity(name) or built_in_entity(name)) is not None
        if not self._pools.acquire(WorkKind.ENTITY):
            self._abandon_entity(batch.instanceId, item.completionToken, stub)
            return False

        def job() -> None:
            if registered:
                result = self._entities.run(batch, infos, item.completionToken)
            else:
                # As the compatible worker does: operations on an entity with no code here fail,
                # instead of the batch bouncing between this worker and the backend.
                missing = name or batch.instanceId
                # ERROR, as Microsoft's worker logs each of these failed operations.
                self._logger.error(
                    "entity '%s' is not registered; failing its %d operation(s)", missing, len(batch.operations)
                )
                result = unregistered_result(batch, infos, item.completionToken, missing)
            self._sender.send(
                f"the entity batch result for '{batch.instanceId}'",
                lambda: stub.CompleteEntityTask(result, timeout=self._sender.timeout),
            )

        def hand_back(_: BaseException) -> None:
            self._abandon_entity(batch.instanceId, item.completionToken, stub)

        what = f"entity batch of '{batch.instanceId}'"
        self._pools.submit(WorkKind.ENTITY, self._settled(job, hand_back, what, done), what=what)
        return True

    def _abandon_entity(self, instance_id: str, token: str, stub: Stub) -> None:
        self._sender.send(
            f"the abandonment of the entity batch for '{instance_id}'",
            lambda: stub.AbandonTaskEntityWorkItem(
                pb.AbandonEntityTaskRequest(completionToken=token), timeout=self._sender.timeout
            ),
        )
