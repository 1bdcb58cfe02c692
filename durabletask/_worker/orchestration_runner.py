"""Running one orchestration work item: the version check, the replay executor, and the response."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

from google.protobuf import wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._replay.failures import proto_from_exception
from durabletask._worker.registry import Registry
from durabletask._worker.versioning import check_orchestration_version, orchestration_version, rejects

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter


class ExecutionResultLike(Protocol):
    """What the replay executor returns: the actions to send and the encoded custom status."""

    @property
    def actions(self) -> Sequence[pb.OrchestratorAction]: ...

    @property
    def custom_status(self) -> str | None: ...


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
    registry: Registry,
    logger: logging.Logger,
    maximum_timer_interval: timedelta | None,
    data_converter: DataConverter | None = None,
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
        )

    return create


@dataclass(frozen=True)
class OrchestrationOutcome:
    """Either a response to complete the work item with, or ``None`` to hand the work item back."""

    response: pb.OrchestratorResponse | None
    reason: str = ""  # why the work item is handed back


def _failed_response(instance_id: str, token: str, details: pb.TaskFailureDetails) -> pb.OrchestratorResponse:
    action = pb.OrchestratorAction(
        id=-1,
        completeOrchestration=pb.CompleteOrchestrationAction(
            orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED, failureDetails=details
        ),
    )
    return pb.OrchestratorResponse(instanceId=instance_id, actions=[action], completionToken=token)


class OrchestrationRunner:
    """Turns an ``OrchestratorRequest`` into an :class:`OrchestrationOutcome`; never raises."""

    def __init__(self, registry: Registry, executor_factory: ExecutorFactory, *, logger: logging.Logger) -> None:
        self._registry = registry
        self._executor_factory = executor_factory
        self._logger = logger

    def run(self, request: pb.OrchestratorRequest, completion_token: str) -> OrchestrationOutcome:
        instance_id = request.instanceId
        versioning = self._registry.versioning
        mismatch = check_orchestration_version(versioning, orchestration_version(request))
        if mismatch is not None:
            self._logger.warning("%s: %s", instance_id, mismatch.message)
            if rejects(versioning):
                return OrchestrationOutcome(None, mismatch.message)
            return OrchestrationOutcome(_failed_response(instance_id, completion_token, mismatch.failure_details()))
        try:
            result = self._executor_factory().execute(instance_id, request.pastEvents, request.newEvents)
        except Exception as exc:
            # The executor turns user errors into a failed completion itself; reaching here is a bug
            # in the SDK or a corrupt history, which must still end the episode visibly.
            self._logger.exception("%s: the orchestration could not be executed", instance_id)
            return OrchestrationOutcome(_failed_response(instance_id, completion_token, proto_from_exception(exc)))
        response = pb.OrchestratorResponse(
            instanceId=instance_id, actions=list(result.actions), completionToken=completion_token
        )
        if result.custom_status is not None:
            response.customStatus.CopyFrom(wrappers_pb2.StringValue(value=result.custom_status))
        return OrchestrationOutcome(response)
