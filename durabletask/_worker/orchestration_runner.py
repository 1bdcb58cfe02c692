"""Running one orchestration work item: the version check, the replay executor, and the response."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from itertools import chain
from typing import TYPE_CHECKING, Protocol, cast

from durabletask._codec import PayloadSource
from durabletask._json_codec import MAX_PAYLOAD_BYTES
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import trace_ids
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._replay.failures import proto_from_exception
from durabletask._tracing.orchestration import OrchestrationTracer, Turn
from durabletask._worker.code_check import CodeMismatchPolicy, check_code, recorded_start
from durabletask._worker.registry import WorkerRegistry
from durabletask._worker.session_cache import SessionCache, is_continuation, offers_session
from durabletask._worker.versioning import check_orchestration_version, rejects
from durabletask.exception_properties import ExceptionPropertiesProvider, properties_reader

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter


class ExecutionResultLike(Protocol):
    """What the replay executor returns: the actions to send and the encoded custom status."""

    @property
    def actions(self) -> Sequence[pb.OrchestratorAction]: ...

    @property
    def encoded_custom_status(self) -> str | None: ...


class Executor(Protocol):
    """Replays an orchestration's history and returns its next actions."""

    def execute(
        self,
        instance_id: str,
        old_events: Sequence[pb.HistoryEvent],
        new_events: Sequence[pb.HistoryEvent],
    ) -> ExecutionResultLike: ...


ExecutorFactory = Callable[[], Executor]


def default_executor_factory(
    registry: WorkerRegistry,
    logger: logging.Logger,
    maximum_timer_interval: timedelta | None,
    data_converter: DataConverter | None = None,
    exception_properties_provider: ExceptionPropertiesProvider | None = None,
    *,
    payload_limit: int = MAX_PAYLOAD_BYTES,
    payloads: PayloadSource | None = None,
) -> ExecutorFactory:
    """A factory for the SDK's replay executor, bound to one worker's registry and settings.

    Each work item gets a fresh executor: an executor holds one orchestration's live state.
    """

    def create() -> Executor:
        return OrchestrationExecutor(
            registry,
            logger=logger,
            maximum_timer_interval=maximum_timer_interval,
            data_converter=data_converter,
            exception_properties_provider=exception_properties_provider,
            payload_limit=payload_limit,
            payloads=payloads,
        )

    return create


@dataclass(frozen=True)
class OrchestrationOutcome:
    """Either a response to complete the work item with, or ``None`` to hand the work item back."""

    response: pb.OrchestratorResponse | None
    reason: str = ""  # why the work item is handed back
    failed: bool = False  # the executor itself failed; its state must not be kept


def _failed_response(instance_id: str, token: str, details: pb.TaskFailureDetails) -> pb.OrchestratorResponse:
    action = pb.OrchestratorAction(
        id=-1,
        completeOrchestration=pb.CompleteOrchestrationAction(
            orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED, failureDetails=details
        ),
    )
    return pb.OrchestratorResponse(instanceId=instance_id, actions=[action], completionToken=token)


HistoryFetcher = Callable[[pb.OrchestratorRequest], list[pb.HistoryEvent]]
"""Fetches the past events of a work item sent without them (``requiresHistoryStreaming``)."""


def _is_resumable(executor: Executor) -> bool:
    return callable(getattr(executor, "resume", None)) and hasattr(executor, "is_complete")


class OrchestrationRunner:
    """Turns an ``OrchestratorRequest`` into an :class:`OrchestrationOutcome`; never raises.

    With a session cache, executors of unfinished orchestrations are kept after their work item, and
    a continuation (a work item carrying only new events) resumes the kept executor. A continuation
    whose executor is gone is answered with ``requiresHistory`` so the backend resends it in full.
    """

    def __init__(
        self,
        registry: WorkerRegistry,
        executor_factory: ExecutorFactory,
        *,
        logger: logging.Logger,
        sessions: SessionCache[Executor] | None = None,
        fetch_history: HistoryFetcher | None = None,
        exception_properties_provider: ExceptionPropertiesProvider | None = None,
        tracer: OrchestrationTracer | None = None,
        store_payloads: Callable[[pb.OrchestratorAction, str], None] | None = None,
    ) -> None:
        self._registry = registry
        # With a payload store: each action's large payloads are stored before the action is copied into the
        # response (protobuf copies a message it is given), so a large payload is never copied there.
        self._store_payloads = store_payloads
        self._tracer = tracer
        self._properties_of = properties_reader(exception_properties_provider, logger)
        self._executor_factory = executor_factory
        self._logger = logger
        self._sessions = sessions
        self._fetch_history = fetch_history

    def run(self, request: pb.OrchestratorRequest, completion_token: str) -> OrchestrationOutcome:
        if is_continuation(request):
            return self._continue(request, completion_token)
        instance_id = request.instanceId
        past: Sequence[pb.HistoryEvent] = request.pastEvents
        if request.requiresHistoryStreaming:
            try:
                past = self._streamed_history(request)
            except Exception as exc:
                self._logger.warning("%s: could not fetch the history: %s", instance_id, exc)
                return OrchestrationOutcome(None, f"the history could not be fetched ({exc})")
        # One look for the executionStarted event serves the version and the code checks.
        start = recorded_start(chain(past, request.newEvents))
        versioning = self._registry.versioning
        mismatch = check_orchestration_version(versioning, _version(start)) if versioning is not None else None
        if mismatch is not None:
            self._logger.warning("%s: %s", instance_id, mismatch.message)
            if rejects(versioning):
                return OrchestrationOutcome(None, mismatch.message)
            return OrchestrationOutcome(_failed_response(instance_id, completion_token, mismatch.failure_details()))
        code_outcome = self._check_code(request, start, completion_token)
        if code_outcome is not None:
            return code_outcome
        executor = self._executor_factory()
        sessions = self._sessions
        # Kept only for a backend that will continue it with new events alone (see offers_session).
        offered = sessions is not None and offers_session(request) and _is_resumable(executor)
        ticket = sessions.begin(instance_id) if offered and sessions is not None else None
        new_events = request.newEvents
        turn = self._begin_trace(request, past, continuation=False)
        outcome = self._execute(
            request, completion_token, lambda: executor.execute(instance_id, past, new_events), turn
        )
        self._finish_trace(request, turn, outcome)
        self._keep(request, executor, outcome, ticket)
        return outcome

    def _check_code(
        self, request: pb.OrchestratorRequest, start: pb.ExecutionStartedEvent | None, completion_token: str
    ) -> OrchestrationOutcome | None:
        """Apply the code-fingerprint policy to the recorded ``start``; ``None`` means run the orchestration."""
        fn = self._registry.get_orchestrator(start.name) if start is not None else None
        check = check_code(start, fn, self._registry.code_mismatch_policy)
        if check.ok:
            return None
        self._logger.warning("%s: %s", request.instanceId, check.message)
        if check.policy is CodeMismatchPolicy.ABANDON:
            return OrchestrationOutcome(None, check.message)
        if check.policy is CodeMismatchPolicy.FAIL:
            details = pb.TaskFailureDetails(
                errorType="durabletask.worker.CodeMismatchError", errorMessage=check.message, isNonRetriable=True
            )
            return OrchestrationOutcome(_failed_response(request.instanceId, completion_token, details))
        return None

    def _continue(self, request: pb.OrchestratorRequest, completion_token: str) -> OrchestrationOutcome:
        executor = None
        if self._sessions is not None:
            executor = self._sessions.take(request.instanceId, request.executionId.value)
        if executor is None or self._sessions is None:
            self._logger.debug("%s: not held here any more; asking for the full history", request.instanceId)
            return OrchestrationOutcome(
                pb.OrchestratorResponse(
                    instanceId=request.instanceId, completionToken=completion_token, requiresHistory=True
                )
            )
        ticket = self._sessions.begin(request.instanceId)
        resume = cast("_Resumable", executor).resume
        turn = self._begin_trace(request, (), continuation=True)
        outcome = self._execute(request, completion_token, lambda: resume(request.newEvents), turn)
        self._finish_trace(request, turn, outcome)
        self._keep(request, executor, outcome, ticket)
        return outcome

    def _begin_trace(
        self, request: pb.OrchestratorRequest, past: Sequence[pb.HistoryEvent], *, continuation: bool
    ) -> Turn | None:
        if self._tracer is None:
            return None
        try:
            return self._tracer.begin(request, past, continuation=continuation)
        except Exception:  # tracing never fails a turn
            self._logger.warning("%s: could not trace the turn", request.instanceId, exc_info=True)
            return None

    def _finish_trace(self, request: pb.OrchestratorRequest, turn: Turn | None, outcome: OrchestrationOutcome) -> None:
        if self._tracer is None or turn is None or outcome.response is None:
            return
        try:
            self._tracer.finish(turn, request, outcome.response)
        except Exception:
            self._logger.warning("%s: could not trace the turn", request.instanceId, exc_info=True)

    def _streamed_history(self, request: pb.OrchestratorRequest) -> list[pb.HistoryEvent]:
        if self._fetch_history is None:
            raise RuntimeError("the work item needs its history streamed, but this worker cannot fetch it")
        return self._fetch_history(request)

    def _keep(
        self, request: pb.OrchestratorRequest, executor: Executor, outcome: OrchestrationOutcome, ticket: int | None
    ) -> None:
        sessions = self._sessions
        if sessions is None:
            return
        # Without a ticket the backend will not continue the session (it sends full histories): keep nothing,
        # and let go of anything kept for the instance before.
        if ticket is None or outcome.failed or cast("_Resumable", executor).is_complete:
            sessions.discard(request.instanceId, ticket)
            return
        sessions.put(request.instanceId, request.executionId.value, executor, ticket)

    def _execute(
        self,
        request: pb.OrchestratorRequest,
        completion_token: str,
        step: Callable[[], ExecutionResultLike],
        turn: Turn | None = None,
    ) -> OrchestrationOutcome:
        instance_id = request.instanceId
        try:
            ids = turn.log_ids if turn is not None else None
            if ids is None and trace_ids.current() is None:
                result = step()  # nothing to set for the logger: spare the context manager
            else:
                with trace_ids.active(ids):
                    result = step()
        except BaseException as exc:  # whatever escapes, the work item gets its response
            # The executor turns user errors into a failed completion itself; reaching here is a bug
            # in the SDK or a corrupt history, which must still end the episode visibly.
            self._logger.exception("%s: the orchestration could not be executed", instance_id)
            details = proto_from_exception(exc, properties_of=self._properties_of)
            failed = _failed_response(instance_id, completion_token, details)
            return OrchestrationOutcome(failed, failed=True)
        actions = list(result.actions)
        if self._store_payloads is not None:
            try:
                for action in actions:
                    self._store_payloads(action, instance_id)
            except Exception as exc:
                self._logger.warning("%s: could not store the turn's payloads: %s", instance_id, exc)
                return OrchestrationOutcome(None, f"its payloads could not be stored ({exc})")
        response = pb.OrchestratorResponse(instanceId=instance_id, actions=actions, completionToken=completion_token)
        if result.encoded_custom_status is not None:
            response.customStatus.value = result.encoded_custom_status  # in place: building it apart would copy it
        return OrchestrationOutcome(response)


class _Resumable(Protocol):
    @property
    def is_complete(self) -> bool: ...

    def resume(self, new_events: Sequence[pb.HistoryEvent]) -> ExecutionResultLike: ...


def _version(started: pb.ExecutionStartedEvent | None) -> str | None:
    """The version the orchestration was started with, from its ``executionStarted`` event."""
    if started is None:
        return None
    return started.version.value if started.HasField("version") else None
