"""Orchestration history events as plain dataclasses, as returned by ``get_orchestration_history``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durabletask.task import FailureDetails

__all__ = [
    "ContinueAsNewEvent",
    "EntityLockGrantedEvent",
    "EntityLockRequestedEvent",
    "EntityOperationCalledEvent",
    "EntityOperationCompletedEvent",
    "EntityOperationFailedEvent",
    "EntityOperationSignaledEvent",
    "EntityUnlockSentEvent",
    "EventRaisedEvent",
    "EventSentEvent",
    "ExecutionCompletedEvent",
    "ExecutionResumedEvent",
    "ExecutionRewoundEvent",
    "ExecutionStartedEvent",
    "ExecutionSuspendedEvent",
    "ExecutionTerminatedEvent",
    "GenericEvent",
    "HistoryEvent",
    "HistoryStateEvent",
    "OrchestrationInstance",
    "OrchestratorCompletedEvent",
    "OrchestratorStartedEvent",
    "ParentInstanceInfo",
    "SubOrchestrationInstanceCompletedEvent",
    "SubOrchestrationInstanceCreatedEvent",
    "SubOrchestrationInstanceFailedEvent",
    "TaskCompletedEvent",
    "TaskFailedEvent",
    "TaskScheduledEvent",
    "TimerCreatedEvent",
    "TimerFiredEvent",
    "TraceContext",
    "to_dict",
]


#: Leaf types that are already JSON values and immutable: returned as they are.
_NATIVE: frozenset[type] = frozenset({bool, int, float, str, type(None)})


@dataclass
class _Holder:
    """Lets :func:`dataclasses.asdict` convert one free-standing value."""

    value: Any


def _copied(value: Any) -> Any:
    """A value of any other shape, converted as ``dataclasses.asdict`` and then the walk below convert it.

    Free-form fields (``orchestration_state``, ``tags``, inputs set by an application) may hold tuples,
    namedtuples, container subclasses or arbitrary objects. Microsoft's ``to_dict`` hands those to
    ``asdict``, which rebuilds tuples and containers with their own type and deep-copies other leaves, so
    the result never shares a mutable value with the event; the interpreter's own ``asdict`` gives the same
    result on every Python version, including its quirks (a ``defaultdict`` raises ``TypeError`` on 3.11).
    """
    return _walk_copy(dataclasses.asdict(_Holder(value))["value"])


def _walk_copy(value: Any) -> Any:
    # After asdict: only datetimes and the (possibly subclassed) lists and dicts are converted further;
    # tuples stay as asdict rebuilt them, with whatever they hold.
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_walk_copy(item) for item in value]
    if isinstance(value, dict):
        return {key: _walk_copy(item) for key, item in value.items()}
    return value


def _plain(value: Any) -> Any:
    """Dataclasses → dicts, datetimes → ISO 8601 text, lists and dicts walked, everything else copied.

    Only the exact built-in types are converted in place (that is the common case, and cheap); anything
    else goes through :func:`_copied`. A dict with a key that is not a plain JSON scalar goes there whole,
    because rebuilding such keys can make two of them equal, and which entry then survives decides which
    values are ever converted.
    """
    kind = type(value)
    if kind in _NATIVE:
        return value
    if hasattr(kind, "__dataclass_fields__"):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if kind is datetime:
        return value.isoformat()
    if kind is list:
        return [_plain(item) for item in value]
    if kind is dict:
        if any(type(key) not in _NATIVE for key in value):
            return _copied(value)
        return {key: _plain(item) for key, item in value.items()}
    return _copied(value)


@dataclass(slots=True)
class OrchestrationInstance:
    """An orchestration instance and, when known, one execution of it."""

    instance_id: str
    execution_id: str | None = None


@dataclass(slots=True)
class ParentInstanceInfo:
    """The orchestration that started a sub-orchestration."""

    task_scheduled_id: int
    name: str | None = None
    version: str | None = None
    orchestration_instance: OrchestrationInstance | None = None


@dataclass(slots=True)
class TraceContext:
    """W3C trace context carried with an event."""

    trace_parent: str
    span_id: str
    trace_state: str | None = None


@dataclass(slots=True)
class HistoryEvent:
    """Base of every history event: its sequence number in the history and when it was recorded."""

    event_id: int
    timestamp: datetime

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON-compatible data (timestamps as ISO 8601 strings)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


@dataclass(slots=True)
class ExecutionStartedEvent(HistoryEvent):
    """An execution of the orchestration began."""

    name: str
    version: str | None = None
    input: str | None = None
    orchestration_instance: OrchestrationInstance | None = None
    parent_instance: ParentInstanceInfo | None = None
    scheduled_start_timestamp: datetime | None = None
    parent_trace_context: TraceContext | None = None
    orchestration_span_id: str | None = None
    tags: dict[str, str] | None = None


@dataclass(slots=True)
class ExecutionCompletedEvent(HistoryEvent):
    """The execution finished; ``orchestration_status`` is the wire status number."""

    orchestration_status: int
    result: str | None = None
    failure_details: FailureDetails | None = None


@dataclass(slots=True)
class ExecutionTerminatedEvent(HistoryEvent):
    """A terminate request arrived."""

    input: str | None = None
    recurse: bool = False


@dataclass(slots=True)
class TaskScheduledEvent(HistoryEvent):
    """The orchestrator scheduled an activity."""

    name: str
    version: str | None = None
    input: str | None = None
    parent_trace_context: TraceContext | None = None
    tags: dict[str, str] | None = None


@dataclass(slots=True)
class TaskCompletedEvent(HistoryEvent):
    """An activity returned."""

    task_scheduled_id: int
    result: str | None = None


@dataclass(slots=True)
class TaskFailedEvent(HistoryEvent):
    """An activity raised."""

    task_scheduled_id: int
    failure_details: FailureDetails | None = None


@dataclass(slots=True)
class SubOrchestrationInstanceCreatedEvent(HistoryEvent):
    """The orchestrator started a sub-orchestration."""

    instance_id: str
    name: str
    version: str | None = None
    input: str | None = None
    parent_trace_context: TraceContext | None = None
    tags: dict[str, str] | None = None


@dataclass(slots=True)
class SubOrchestrationInstanceCompletedEvent(HistoryEvent):
    """A sub-orchestration completed."""

    task_scheduled_id: int
    result: str | None = None


@dataclass(slots=True)
class SubOrchestrationInstanceFailedEvent(HistoryEvent):
    """A sub-orchestration failed."""

    task_scheduled_id: int
    failure_details: FailureDetails | None = None


@dataclass(slots=True)
class TimerCreatedEvent(HistoryEvent):
    """The orchestrator created a durable timer."""

    fire_at: datetime


@dataclass(slots=True)
class TimerFiredEvent(HistoryEvent):
    """A durable timer fired."""

    fire_at: datetime
    timer_id: int


@dataclass(slots=True)
class OrchestratorStartedEvent(HistoryEvent):
    """An orchestrator episode began (its timestamp is the replay-safe current time)."""


@dataclass(slots=True)
class OrchestratorCompletedEvent(HistoryEvent):
    """An orchestrator episode ended."""


@dataclass(slots=True)
class EventSentEvent(HistoryEvent):
    """The orchestrator sent an event to another instance."""

    instance_id: str
    name: str
    input: str | None = None


@dataclass(slots=True)
class EventRaisedEvent(HistoryEvent):
    """An external event arrived."""

    name: str
    input: str | None = None


@dataclass(slots=True)
class GenericEvent(HistoryEvent):
    """A backend-specific event with free-form data."""

    data: str | None = None


@dataclass(slots=True)
class HistoryStateEvent(HistoryEvent):
    """A snapshot of the instance state, as a dict of the wire fields."""

    orchestration_state: dict[str, Any]


@dataclass(slots=True)
class ContinueAsNewEvent(HistoryEvent):
    """The orchestration restarted itself with new input."""

    input: str | None = None


@dataclass(slots=True)
class ExecutionSuspendedEvent(HistoryEvent):
    """The instance was suspended (``input`` is the reason)."""

    input: str | None = None


@dataclass(slots=True)
class ExecutionResumedEvent(HistoryEvent):
    """The instance was resumed (``input`` is the reason)."""

    input: str | None = None


@dataclass(slots=True)
class EntityOperationSignaledEvent(HistoryEvent):
    """The orchestrator signaled an entity (fire and forget)."""

    request_id: str
    operation: str
    scheduled_time: datetime | None = None
    input: str | None = None
    target_instance_id: str | None = None


@dataclass(slots=True)
class EntityOperationCalledEvent(HistoryEvent):
    """The orchestrator called an entity and awaits its result."""

    request_id: str
    operation: str
    scheduled_time: datetime | None = None
    input: str | None = None
    parent_instance_id: str | None = None
    parent_execution_id: str | None = None
    target_instance_id: str | None = None


@dataclass(slots=True)
class EntityOperationCompletedEvent(HistoryEvent):
    """An entity operation returned."""

    request_id: str
    output: str | None = None


@dataclass(slots=True)
class EntityOperationFailedEvent(HistoryEvent):
    """An entity operation raised."""

    request_id: str
    failure_details: FailureDetails | None = None


@dataclass(slots=True)
class EntityLockRequestedEvent(HistoryEvent):
    """The orchestrator asked to lock a set of entities (a critical section)."""

    critical_section_id: str
    lock_set: list[str]
    position: int
    parent_instance_id: str | None = None


@dataclass(slots=True)
class EntityLockGrantedEvent(HistoryEvent):
    """The requested entity locks were all granted."""

    critical_section_id: str


@dataclass(slots=True)
class EntityUnlockSentEvent(HistoryEvent):
    """The orchestrator released an entity lock."""

    critical_section_id: str
    parent_instance_id: str | None = None
    target_instance_id: str | None = None


@dataclass(slots=True)
class ExecutionRewoundEvent(HistoryEvent):
    """The failed instance was rewound."""

    reason: str | None = None
    parent_execution_id: str | None = None
    instance_id: str | None = None
    parent_trace_context: TraceContext | None = None
    name: str | None = None
    version: str | None = None
    input: str | None = None
    parent_instance: ParentInstanceInfo | None = None
    tags: dict[str, str] | None = None


def to_dict(event: HistoryEvent) -> dict[str, Any]:
    """``event.to_dict()``: the event as JSON-compatible data.

    Args:
        event: Any history event.
    """
    return event.to_dict()
