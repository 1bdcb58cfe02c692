"""Completions and abandons of leased work: checked against their lease and limits, then applied to the engine."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from dtscale_emulator.dispatch import refusals
from dtscale_emulator.dispatch.leases import LeaseBook
from dtscale_emulator.dispatch.sessions import SessionTable
from dtscale_emulator.dispatch.streams import Lease
from dtscale_emulator.engine.entities import Entities, EntityWork
from dtscale_emulator.engine.events import to_micros
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.engine.work import ActivityWork, Interleaver, OrchestrationWork, SessionMark
from dtscale_emulator.errors import (
    EmulatorError,
    FailedPreconditionError,
    InvalidArgumentError,
    ResourceExhaustedError,
)
from dtscale_emulator.limits import Limits, PayloadTooLargeError, RefusedContentError
from dtscale_emulator.ops.tracing import WorkTracer
from dtscale_emulator.protocol import pb

_UNTRACED = nullcontext()
#: Queued operations searched for those a carried-over entity batch answered (a batch holds at most 100; others
#: may have become visible ahead of them since).
_CARRIED_BATCH_SEARCH = 1_000


def _request_id(operation: pb.HistoryEvent) -> str:
    if operation.HasField("entityOperationSignaled"):
        return operation.entityOperationSignaled.requestId
    return operation.entityOperationCalled.requestId


class Completions:
    """Applies what workers send back for the work they hold.

    Args:
        end_lease: Called once a completion or abandon has ended a lease (wakes streams, tells listeners).
    """

    def __init__(
        self,
        engine: Engine,
        entities: Entities,
        limits: Limits,
        leases: LeaseBook,
        sessions: SessionTable,
        end_lease: Callable[[Lease], None],
        tracer: WorkTracer | None,
        interleaver: Interleaver | None,
    ) -> None:
        self.engine = engine
        self.entities = entities
        self.limits = limits
        self.leases = leases
        self.sessions = sessions
        self._end_lease = end_lease
        self.tracer = tracer
        self.interleaver = interleaver
        self.history_requests = 0  # continuations answered with requiresHistory (observability)

    def _completing(
        self, lease: Lease, response: pb.OrchestratorResponse | pb.ActivityResponse
    ) -> AbstractContextManager[None]:
        return _UNTRACED if self.tracer is None else self.tracer.completing(lease, response)

    def orchestration(self, hub: str, response: pb.OrchestratorResponse) -> None:
        lease = self.leases.take(hub, response.completionToken, "orchestration")
        with self._completing(lease, response):
            self._orchestration(hub, lease, response)

    def _orchestration(self, hub: str, lease: Lease, response: pb.OrchestratorResponse) -> None:
        work = lease.work
        assert isinstance(work, OrchestrationWork)
        if response.instanceId and response.instanceId != work.instance_id:
            raise InvalidArgumentError(
                f"instanceId '{response.instanceId}' does not match the work item's instance '{work.instance_id}'"
            )
        if response.requiresHistory:
            # The worker no longer holds the orchestration: hand the work item out again, in full.
            self.history_requests += 1
            self.abandon(hub, lease.token, "orchestration")
            return
        refused: EmulatorError | None = None
        try:
            # A malformed response is refused here and keeps its lease; one the emulator cannot store (an
            # oversized payload, an entity ID over the limit) fails the turn.
            self.limits.orchestrator_response(response)
        except RefusedContentError as error:
            refused = error
        try:
            mark = self._apply_turn(hub, work, lease.token, response, refused)
            self._accepted(lease)
            if mark is not None and lease.stream.keeps_sessions:
                self.sessions.keep(lease.stream.id, hub, work.instance_id, mark)
        except EmulatorError as error:
            if not isinstance(error, FailedPreconditionError | RefusedContentError | ResourceExhaustedError):
                # The response was refused, so the work item goes back to the queue for another try.
                self.engine.release(hub, lease.kind, lease.key, lease.token)
            raise
        finally:
            self._end_lease(lease)

    def _apply_turn(
        self,
        hub: str,
        work: OrchestrationWork,
        token: str,
        response: pb.OrchestratorResponse,
        refused: EmulatorError | None,
    ) -> SessionMark | None:
        """Applies a turn; one over a size limit fails the orchestration and then raises why.

        Redelivered, the same turn would be refused the same way, forever.
        """
        if refused is None:
            try:
                return self.engine.complete_orchestration(hub, work, token, response)
            except ResourceExhaustedError as error:
                refused = error
        failed = refusals.failed_turn(work.instance_id, response, refused)
        self.engine.complete_orchestration(hub, work, token, failed, limited=False)
        raise refused

    def activity(self, hub: str, response: pb.ActivityResponse) -> None:
        lease = self.leases.take(hub, response.completionToken, "activity")
        with self._completing(lease, response):
            self._activity(hub, lease, response)

    def _activity(self, hub: str, lease: Lease, response: pb.ActivityResponse) -> None:
        work = lease.work
        assert isinstance(work, ActivityWork)
        try:
            try:
                self.limits.payload("result", response.result.value if response.HasField("result") else None)
            except PayloadTooLargeError as error:
                # Redelivered, the activity would return the same result: it fails instead.
                failed = refusals.failed_activity(work.request, response, error)
                self.engine.complete_activity(hub, work.activity_id, lease.token, failed)
                raise
            self.engine.complete_activity(hub, work.activity_id, lease.token, response)
            self._accepted(lease)
        finally:
            self._end_lease(lease)

    def entity(self, hub: str, result: pb.EntityBatchResult) -> None:
        lease = self.leases.take(hub, result.completionToken, "entity")
        work = lease.work
        assert isinstance(work, EntityWork)
        if not work.operations:
            # Only a lease carried over a restart has none (a batch is leased with one operation or more).
            work = self._carried_batch(hub, work, result)
        try:
            try:
                self.limits.payload("entityState", result.entityState.value if result.HasField("entityState") else None)
                self.limits.entity_batch_result(result)
            except RefusedContentError as error:
                # Redelivered, the batch would end in the same state: its operations fail instead.
                self.entities.complete(hub, work, lease.token, refusals.failed_batch(work.request, result, error))
                raise
            self.entities.complete(hub, work, lease.token, result)
            self._accepted(lease)
        finally:
            self._end_lease(lease)

    def _carried_batch(self, hub: str, work: EntityWork, result: pb.EntityBatchResult) -> EntityWork:
        """The batch of an entity lease carried over from a previous process, found by the request IDs of the
        operations its result answers (``operationInfos``, which both SDKs send): that process's list is gone.

        Raises:
            FailedPreconditionError: the result does not name a queued operation for each of its results; the
                batch is offered again once the carried lease expires.
        """
        done = len(result.results)
        wanted = [info.requestId for info in result.operationInfos[:done]]
        at = to_micros(self.entities.clock.now())
        with self.entities.backend.transaction() as tx:
            queued = tx.entity_operations(hub, work.entity_id, at, _CARRIED_BATCH_SEARCH)
        by_request: dict[str, list[tuple[int, pb.HistoryEvent]]] = {}
        for message in queued:
            event = pb.HistoryEvent.FromString(message.event)
            by_request.setdefault(_request_id(event), []).append((message.id, event))
        taken = [by_request[r].pop(0) for r in wanted if by_request.get(r)]
        if len(wanted) < done or len(taken) < done:
            raise FailedPreconditionError(
                f"the result for completion token '{result.completionToken}' cannot be matched to the operations "
                f"queued for entity '{work.entity_id}' (operationInfos must name each of its {done} results' "
                "requests); the batch is offered again"
            )
        operations = [event for _, event in taken]
        request = pb.EntityRequest(instanceId=work.entity_id, operationRequests=operations)
        return EntityWork(work.entity_id, [i for i, _ in taken], operations, request)

    def _accepted(self, lease: Lease) -> None:
        if self.interleaver is not None:
            self.interleaver.committed(lease.kind, lease.token)

    def abandon(self, hub: str, token: str, kind: str) -> None:
        lease = self.leases.take(hub, token, kind)
        # A stream that was full is woken for its freed slot even when the release finds that the lease had
        # moved on in storage (the instance was replaced meanwhile) and so announces nothing.
        self._end_lease(lease)
        self.engine.release(hub, kind, lease.key, token)
