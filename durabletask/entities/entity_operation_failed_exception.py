"""The error an orchestration sees when an entity operation it called has failed."""

from __future__ import annotations

from durabletask._errors import DurableTaskError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto.orchestrator_service_pb2 import TaskFailureDetails as TaskFailureDetails  # as in Microsoft's
from durabletask.entities.entity_instance_id import EntityInstanceId

__all__ = ["EntityOperationFailedException"]


class EntityOperationFailedException(DurableTaskError):
    """An operation called with ``call_entity`` raised inside the entity.

    Attributes:
        entity_instance_id: The entity the operation ran on.
        operation_name: The operation that failed.
        failure_details: The failure as the entity reported it (type, message, stack trace).
    """

    def __init__(
        self, entity_instance_id: EntityInstanceId, operation_name: str, failure_details: pb.TaskFailureDetails
    ) -> None:
        super().__init__()
        self.entity_instance_id = entity_instance_id
        self.operation_name = operation_name
        self.failure_details = failure_details
        # Read by the failure conversion so the entity's own error becomes the inner failure.
        self._failure_proto = failure_details

    def __str__(self) -> str:
        return (
            f"Operation '{self.operation_name}' on entity '{self.entity_instance_id}' failed with error: "
            f"{self.failure_details.errorMessage}"
        )
