"""The orchestration that carries one client operation to a schedule entity and reports how it ended.

Clients do not signal the entity directly: they start this orchestration and wait for it, so a refused
operation (an invalid transition, a bad configuration) comes back to the caller as a failure.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from durabletask import task
from durabletask.entities import EntityInstanceId
from durabletask.scheduled import transitions
from durabletask.scheduled.models import ScheduleCreationOptions, ScheduleUpdateOptions

__all__ = ["ScheduleOperationRequest", "execute_schedule_operation_orchestrator"]

# The operations whose input is an options object; the others carry a plain value or nothing.
_OPTION_TYPES: dict[str, type[Any]] = {
    transitions.CREATE_SCHEDULE: ScheduleCreationOptions,
    transitions.UPDATE_SCHEDULE: ScheduleUpdateOptions,
}


def _plain(value: Any) -> Any:
    # Options go out as their JSON object whatever the converter does with dataclasses.
    if isinstance(value, (ScheduleCreationOptions, ScheduleUpdateOptions)):
        return value.to_json()
    return value


@dataclass
class ScheduleOperationRequest:
    """One operation for one schedule entity: the orchestration's input.

    On the wire it is ``{"entity_id": "@schedule@<id>", "operation_name": ..., "input": ...}`` with the
    options as their plain JSON object, the shape both SDKs send.
    """

    entity_id: str
    operation_name: str
    input: Any | None = None

    def to_json(self) -> dict[str, Any]:
        """The request as a JSON-ready dict: the entity, the operation and its input (options objects as their JSON)."""
        return {"entity_id": self.entity_id, "operation_name": self.operation_name, "input": _plain(self.input)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScheduleOperationRequest:
        """Reads what :meth:`to_json` wrote, turning the input of an operation that takes options back into them.

        Args:
            data: A dict with ``entity_id``, ``operation_name`` and optionally ``input``.

        Raises:
            KeyError: ``entity_id`` or ``operation_name`` is missing.
        """
        name = data["operation_name"]
        payload = data.get("input")
        kind = _OPTION_TYPES.get(name)
        if kind is not None and isinstance(payload, dict):
            payload = kind.from_json(payload)
        return cls(entity_id=data["entity_id"], operation_name=name, input=payload)


def execute_schedule_operation_orchestrator(
    ctx: task.OrchestrationContext, request: Any
) -> Generator[task.Task[Any], Any, Any]:
    """Call the schedule entity with the request's operation and return its result (its failure fails this).

    Args:
        ctx: The orchestration context.
        request: A :class:`ScheduleOperationRequest`, or its JSON dict.

    Raises:
        ValueError: ``request`` is not a schedule operation request or names an invalid entity ID.
    """
    if isinstance(request, dict):
        request = ScheduleOperationRequest.from_json(request)
    if not isinstance(request, ScheduleOperationRequest):
        raise ValueError("the input must be a schedule operation request (entity_id, operation_name, input)")
    entity = EntityInstanceId.parse(request.entity_id)
    result = yield ctx.call_entity(entity, request.operation_name, _plain(request.input))
    return result
