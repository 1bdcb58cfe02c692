"""Completions the emulator cannot store (over a limit) become failures, so the work does not come back.

Redelivering such work would only produce the same refused completion again, forever.
"""

from __future__ import annotations

from dtscale_emulator.engine import events
from dtscale_emulator.errors import EmulatorError, ResourceExhaustedError
from dtscale_emulator.limits import RefusedContentError
from dtscale_emulator.protocol import pb

#: ``errorType`` of the failures recorded here, by the limit that was exceeded.
PAYLOAD_TOO_LARGE = "PayloadTooLarge"
HISTORY_TOO_LARGE = "HistoryTooLarge"


def _details(error: EmulatorError, what: str) -> pb.TaskFailureDetails:
    if isinstance(error, ResourceExhaustedError):
        kind = HISTORY_TOO_LARGE
    else:
        kind = error.failure_type if isinstance(error, RefusedContentError) else PAYLOAD_TOO_LARGE
    # Non-retriable (as every failure the emulator makes): the same work would exceed the same limit again.
    return events.failure(kind, f"{what} was refused by the emulator: {error}")


def failed_activity(
    request: pb.ActivityRequest, response: pb.ActivityResponse, error: EmulatorError
) -> pb.ActivityResponse:
    """The activity's result replaced by a failure naming the limit its result exceeded."""
    return pb.ActivityResponse(
        instanceId=response.instanceId,
        taskId=response.taskId,
        completionToken=response.completionToken,
        failureDetails=_details(error, f"the result of activity '{request.name}'"),
    )


def failed_turn(instance_id: str, response: pb.OrchestratorResponse, error: EmulatorError) -> pb.OrchestratorResponse:
    """A turn that fails the orchestration, in place of one the emulator refused."""
    failed = pb.CompleteOrchestrationAction(
        orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED,
        failureDetails=_details(error, f"the response of orchestration '{instance_id}'"),
    )
    return pb.OrchestratorResponse(
        instanceId=instance_id,
        completionToken=response.completionToken,
        actions=[pb.OrchestratorAction(id=-1, completeOrchestration=failed)],
    )


def failed_batch(request: pb.EntityRequest, result: pb.EntityBatchResult, error: EmulatorError) -> pb.EntityBatchResult:
    """Every operation of the batch failed, and the entity keeps the state it had before it."""
    details = _details(error, f"the result of entity '{request.instanceId}'")
    failure = pb.OperationResult(failure=pb.OperationResultFailure(failureDetails=details))
    return pb.EntityBatchResult(
        completionToken=result.completionToken,
        results=[failure for _ in request.operationRequests],
        entityState=request.entityState if request.HasField("entityState") else None,
    )
