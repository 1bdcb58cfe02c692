"""Entity work items: both request shapes as one batch, and the result for an entity with no code here."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Protocol

from google.protobuf import timestamp_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import EntityNotRegisteredError
from durabletask._replay.failures import proto_from_exception
from durabletask.entities import EntityInstanceId


class EntityBatchRunner(Protocol):
    """Runs one batch of operations on one entity and returns the batch's result."""

    def run(
        self, batch: pb.EntityBatchRequest, operation_infos: list[pb.OperationInfo], completion_token: str
    ) -> pb.EntityBatchResult: ...


def as_batch(item: pb.WorkItem) -> tuple[pb.EntityBatchRequest, list[pb.OperationInfo]]:
    """The batch to run, and for the history-event shape (``entityRequestV2``) where each result goes."""
    if item.HasField("entityRequest"):
        return item.entityRequest, []
    request = item.entityRequestV2
    batch = pb.EntityBatchRequest(instanceId=request.instanceId, entityState=request.entityState)
    infos: list[pb.OperationInfo] = []
    for event in request.operationRequests:
        if event.HasField("entityOperationSignaled"):
            signaled = event.entityOperationSignaled
            batch.operations.append(
                pb.OperationRequest(operation=signaled.operation, requestId=signaled.requestId, input=signaled.input)
            )
            infos.append(pb.OperationInfo(requestId=signaled.requestId))
        elif event.HasField("entityOperationCalled"):
            called = event.entityOperationCalled
            batch.operations.append(
                pb.OperationRequest(operation=called.operation, requestId=called.requestId, input=called.input)
            )
            # The caller waits for this result: the backend routes it to the calling orchestration.
            caller = pb.OrchestrationInstance(
                instanceId=called.parentInstanceId.value, executionId=called.parentExecutionId
            )
            infos.append(pb.OperationInfo(requestId=called.requestId, responseDestination=caller))
    return batch, infos


def entity_name(instance_id: str) -> str | None:
    """The entity name in an ``@name@key`` instance ID, or ``None`` when the ID is malformed."""
    try:
        return EntityInstanceId.parse(instance_id).entity
    except ValueError:
        return None


def unregistered_result(
    batch: pb.EntityBatchRequest, infos: list[pb.OperationInfo], token: str, name: str
) -> pb.EntityBatchResult:
    """Every operation fails with ``EntityNotRegisteredError``; the entity's state is left as it was."""
    now = timestamp_pb2.Timestamp()
    now.FromDatetime(datetime.now(timezone.utc))
    details = proto_from_exception(EntityNotRegisteredError(f"Entity function named '{name}' was not registered!"))
    failure = pb.OperationResult(
        failure=pb.OperationResultFailure(failureDetails=details, startTimeUtc=now, endTimeUtc=now)
    )
    result = pb.EntityBatchResult(
        results=[failure] * len(batch.operations), completionToken=token, operationInfos=infos
    )
    if batch.HasField("entityState"):
        result.entityState.CopyFrom(batch.entityState)
    return result
