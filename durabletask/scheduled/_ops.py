"""What the sync and async schedule clients share: the requests they send and how they read the answers.

No I/O here: each client shell sends what these functions build and hands back what they parse, so the two
differ only in how they wait.
"""

from __future__ import annotations

import re
from typing import Any

from durabletask.client import EntityMetadata, EntityQuery, OrchestrationState, OrchestrationStatus
from durabletask.entities import EntityInstanceId
from durabletask.scheduled._wire import aware
from durabletask.scheduled.exceptions import ScheduleInvalidTransitionError, ScheduleNotFoundError
from durabletask.scheduled.models import ScheduleDescription, ScheduleQuery, ScheduleState
from durabletask.scheduled.orchestrator import ScheduleOperationRequest
from durabletask.scheduled.schedule_entity import ENTITY_NAME
from durabletask.scheduled.schedule_status import ScheduleStatus

# The refusal text of either SDK's entity; its statuses read "Active" (ours) or "ScheduleStatus.ACTIVE".
_REFUSAL = re.compile(r"operation '(?P<op>[^']+)' cannot transition from '(?P<src>[^']+)' to '(?P<dst>[^']+)'")


class ScheduleOperationRefusedError(ScheduleInvalidTransitionError, RuntimeError):
    """The entity refused the operation in the schedule's status (e.g. pausing a paused schedule).

    A ``RuntimeError`` as in Microsoft's client, and a ``ScheduleInvalidTransitionError`` saying which
    transition was refused.
    """


class ScheduleOperationNotFoundError(ScheduleNotFoundError, RuntimeError):
    """The operation needs an existing schedule and there is none (a ``RuntimeError`` as in Microsoft's client)."""


def entity_id(schedule_id: str) -> EntityInstanceId:
    if not schedule_id:
        raise ValueError("schedule_id cannot be empty.")
    return EntityInstanceId(ENTITY_NAME, schedule_id)


def operation_input(schedule_id: str, operation: str, payload: Any = None) -> dict[str, Any]:
    """The input of the operation orchestration, as plain JSON (whatever the client's converter)."""
    return ScheduleOperationRequest(str(entity_id(schedule_id)), operation, payload).to_json()


def _status(text: str) -> ScheduleStatus:
    return ScheduleStatus.from_dotnet(text.rsplit(".", 1)[-1] if text.startswith("ScheduleStatus.") else text)


def check_outcome(schedule_id: str, operation: str, state: OrchestrationState | None) -> None:
    """Nothing when the operation orchestration completed; otherwise the error the caller gets.

    Raises:
        ScheduleOperationNotFoundError: the schedule does not exist (the entity refused from ``Uninitialized``).
        ScheduleOperationRefusedError: the transition is not allowed in the schedule's status.
        RuntimeError: any other failure (e.g. ``start_at cannot be later than end_at``).
    """
    if state is not None and state.runtime_status == OrchestrationStatus.COMPLETED:
        return
    failure = state.failure_details if state is not None else None
    detail = failure.message if failure is not None else "unknown error"
    message = f"Failed to '{operation}' schedule '{schedule_id}': {detail}"
    refused = _REFUSAL.search(detail)
    if refused is None:
        raise RuntimeError(message)
    source, target = _status(refused["src"]), _status(refused["dst"])
    error: ScheduleNotFoundError | ScheduleInvalidTransitionError
    if source == ScheduleStatus.UNINITIALIZED:
        error = ScheduleOperationNotFoundError(schedule_id)
    else:
        error = ScheduleOperationRefusedError(schedule_id, source, target, refused["op"])
    error.args = (message,)
    raise error


def description_of(schedule_id: str, metadata: EntityMetadata | None) -> ScheduleDescription:
    """The schedule in an entity's metadata.

    Raises:
        ScheduleNotFoundError: there is no such entity, or it holds no schedule.
    """
    state = state_of(metadata)
    if state is None:
        raise ScheduleNotFoundError(schedule_id)
    return state.to_description()


def state_of(metadata: EntityMetadata | None) -> ScheduleState | None:
    if metadata is None:
        return None
    raw = metadata.get_typed_state()
    if not isinstance(raw, dict):
        return None
    state = ScheduleState.from_json(raw)
    return state if state.schedule_configuration is not None else None


def entity_query(query: ScheduleQuery | None) -> EntityQuery:
    prefix = (query.schedule_id_prefix if query else None) or ""
    page_size = (query.page_size if query else None) or ScheduleQuery.DEFAULT_PAGE_SIZE
    return EntityQuery(instance_id_starts_with=f"@{ENTITY_NAME}@{prefix}", include_state=True, page_size=page_size)


def matches_filter(state: ScheduleState, query: ScheduleQuery | None) -> bool:
    """Whether a schedule passes the query's status and creation-time filters (bounds exclusive)."""
    if query is None:
        return True
    if query.status is not None and state.status != query.status:
        return False
    created = aware(state.schedule_created_at)
    if query.created_from is not None and not (created is not None and created > query.created_from):
        return False
    return query.created_to is None or (created is not None and created < query.created_to)


def matching(found: list[EntityMetadata], query: ScheduleQuery | None) -> list[ScheduleDescription]:
    """The schedules among ``found`` that pass the query's filters (applied here, after each page is read)."""
    states = (state_of(metadata) for metadata in found)
    return [state.to_description() for state in states if state is not None and matches_filter(state, query)]
