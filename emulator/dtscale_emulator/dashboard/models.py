"""What the dashboard shows of instances, history events and entities, read from the protocol's messages.

The rows hold plain Python values (times aware, in UTC), so the pages are built and tested without gRPC.
History events keep every field the protocol gave, under the snake_case names the Durable Task SDKs use for
them, so the page's payload view reads the same whichever SDK wrote the history.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.message import Message

from dtscale_emulator.protocol import pb

_STATUS_PREFIX = "ORCHESTRATION_STATUS_"
#: Runtime status names in wire order (RUNNING is 0).
STATUSES = tuple(
    name.removeprefix(_STATUS_PREFIX) for name, _ in sorted(pb.OrchestrationStatus.items(), key=lambda i: i[1])
)
#: Where SDKs record an instance's attach fingerprint among its tags; shown apart, never as tags.
FINGERPRINT_PREFIX = "durabletask.fingerprint."


def status_name(number: int) -> str:
    """The runtime status's name (``FAILED``), or its number as text when this protocol does not know it."""
    return STATUSES[number] if 0 <= number < len(STATUSES) else str(number)


def status_number(name: str) -> int:
    return STATUSES.index(name)


def _time(stamp: Any) -> datetime:
    return stamp.ToDatetime(tzinfo=timezone.utc)  # type: ignore[no-any-return]


def _optional_time(message: Message, name: str) -> datetime | None:
    return _time(getattr(message, name)) if message.HasField(name) else None


def _optional_text(message: Message, name: str) -> str | None:
    return str(getattr(message, name).value) if message.HasField(name) else None


def split_tags(tags: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The caller's own tags and the fingerprint's."""
    own = {k: v for k, v in tags.items() if not k.startswith(FINGERPRINT_PREFIX)}
    return own, {k: v for k, v in tags.items() if k.startswith(FINGERPRINT_PREFIX)}


# ------------------------------------------------------------------------------------------------ instances


@dataclass(frozen=True)
class InstanceRow:
    """One orchestration instance as the list and the instance page show it."""

    instance_id: str
    name: str
    status: str
    created_at: datetime
    last_updated_at: datetime
    version: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    fingerprint: dict[str, str] = field(default_factory=dict)
    execution_id: str | None = None
    input: str | None = None
    output: str | None = None
    custom_status: str | None = None
    failure: dict[str, Any] | None = None
    scheduled_start_at: datetime | None = None
    completed_at: datetime | None = None
    parent_instance_id: str | None = None


def failure_of(details: pb.TaskFailureDetails) -> dict[str, Any]:
    """An instance's failure as the page shows it, causes included."""
    return {
        "error_type": details.errorType,
        "message": details.errorMessage,
        "stack_trace": _optional_text(details, "stackTrace"),
        "inner": failure_of(details.innerFailure) if details.HasField("innerFailure") else None,
    }


def instance_row(state: pb.OrchestrationState) -> InstanceRow:
    """The row of a protocol ``OrchestrationState``; an empty payload reads as none (no JSON value is empty)."""
    failed = state.HasField("failureDetails") and bool(
        state.failureDetails.errorMessage or state.failureDetails.errorType
    )
    own, fingerprint = split_tags(state.tags)
    return InstanceRow(
        instance_id=state.instanceId,
        name=state.name,
        status=status_name(state.orchestrationStatus),
        created_at=_time(state.createdTimestamp),
        last_updated_at=_time(state.lastUpdatedTimestamp),
        version=_optional_text(state, "version"),
        tags=own,
        fingerprint=fingerprint,
        execution_id=_optional_text(state, "executionId"),
        input=_optional_text(state, "input") or None,
        output=_optional_text(state, "output") or None,
        custom_status=_optional_text(state, "customStatus") or None,
        failure=failure_of(state.failureDetails) if failed else None,
        scheduled_start_at=_optional_time(state, "scheduledStartTimestamp"),
        completed_at=_optional_time(state, "completedTimestamp"),
        parent_instance_id=_optional_text(state, "parentInstanceId"),
    )


# -------------------------------------------------------------------------------------------------- history


@dataclass(frozen=True)
class HistoryEntry:
    """One history event: its kind (``TaskScheduled``), and its fields as JSON-ready values (unset ones left out)."""

    event_id: int
    kind: str
    timestamp: datetime
    fields: dict[str, Any]

    @property
    def name(self) -> str | None:
        value = self.fields.get("name")
        return value if isinstance(value, str) and value else None


_WRAPPERS = {f"google.protobuf.{n}Value" for n in ("String", "Bool", "Int32", "Int64", "UInt32", "UInt64", "Double")}
_JSON_TYPES = {"google.protobuf.Value", "google.protobuf.Struct", "google.protobuf.ListValue"}


def snake(name: str) -> str:
    """``taskScheduledId`` → ``task_scheduled_id``, ``spanID`` → ``span_id``."""
    return re.sub(r"([a-z0-9])([A-Z]+)", r"\1_\2", name).lower()


def _history_failure(details: pb.TaskFailureDetails) -> dict[str, Any]:
    # The shape the SDKs give failure details in history events.
    properties = {k: json_format.MessageToDict(v) for k, v in details.properties.items()}
    return {
        "message": details.errorMessage,
        "error_type": details.errorType,
        "stack_trace": _optional_text(details, "stackTrace"),
        "inner_failure": _history_failure(details.innerFailure) if details.HasField("innerFailure") else None,
        "properties": properties or None,
    }


def _message_value(message: Message) -> Any:
    kind = message.DESCRIPTOR.full_name
    if kind in _WRAPPERS:
        return cast(Any, message).value
    if kind == "google.protobuf.Timestamp":
        return _time(message).isoformat()
    if kind in _JSON_TYPES:
        return json_format.MessageToDict(message)
    if kind == pb.TaskFailureDetails.DESCRIPTOR.full_name:
        return _history_failure(cast("pb.TaskFailureDetails", message))
    return message_fields(message, keep_unset=True)


def _field_value(message: Message, descriptor: Any) -> Any:
    value = getattr(message, descriptor.name)
    kind = descriptor.message_type
    if kind is not None and kind.GetOptions().map_entry:
        if kind.fields_by_name["value"].message_type is not None:
            return {k: _message_value(v) for k, v in value.items()} or None
        return (split_tags(value)[0] if descriptor.name == "tags" else dict(value)) or None
    if descriptor.is_repeated:
        return [_message_value(v) for v in value] if kind is not None else list(value)
    if kind is not None:
        return _message_value(value) if message.HasField(descriptor.name) else None
    if descriptor.enum_type is not None:
        known = descriptor.enum_type.values_by_number.get(value)
        return known.name.removeprefix(_STATUS_PREFIX) if known is not None else value
    return value


def message_fields(message: Message, *, keep_unset: bool = False) -> dict[str, Any]:
    """A message's fields by their snake_case names; top-level unset fields are left out unless ``keep_unset``."""
    found = {snake(d.name): _field_value(message, d) for d in message.DESCRIPTOR.fields}
    return found if keep_unset else {k: v for k, v in found.items() if v is not None}


def history_entry(event: pb.HistoryEvent) -> HistoryEntry:
    """The entry of a protocol ``HistoryEvent``.

    Raises:
        ValueError: the event has no kind (a backend's bug: the page names the event).
    """
    which = event.WhichOneof("eventType")
    if which is None:
        raise ValueError(f"history event {event.eventId} has no event type")
    kind = (which[0].upper() + which[1:]).removesuffix("Event")
    return HistoryEntry(event.eventId, kind, _time(event.timestamp), message_fields(getattr(event, which)))


# ------------------------------------------------------------------------------------------------- entities


def parse_entity_id(text: str) -> tuple[str, str]:
    """``(name, key)`` of ``@name@key``; the name is case-insensitive, so lower-cased, as every SDK sends it.

    Raises:
        ValueError: ``text`` is not of that form.
    """
    if not text.startswith("@"):
        raise ValueError(f"entity ID {text!r} must have the form '@name@key' (it must start with '@')")
    name, at, key = text[1:].partition("@")
    if not at:
        raise ValueError(f"entity ID {text!r} must have the form '@name@key' (no '@' before the key)")
    if not name:
        raise ValueError("entity name cannot be empty")
    if not key:
        raise ValueError("entity key cannot be empty")
    return name.lower(), key


def entity_id(name: str, key: str) -> str:
    return f"@{name.lower()}@{key}"


@dataclass(frozen=True)
class EntityRow:
    """One entity: its state as stored (JSON text, when asked for) and its lock owner as given."""

    id: str
    name: str
    key: str
    last_modified: datetime
    backlog_queue_size: int
    locked_by: str | None
    state: str | None


def entity_row(entity: pb.EntityMetadata, *, include_state: bool) -> EntityRow:
    """The row of a protocol ``EntityMetadata`` (an ID not of the ``@name@key`` form is shown as it is)."""
    try:
        name, key = parse_entity_id(entity.instanceId)
    except ValueError:
        name, key = "", entity.instanceId
    state = _optional_text(entity, "serializedState") if include_state else None
    return EntityRow(
        id=entity.instanceId,
        name=name,
        key=key,
        last_modified=_time(entity.lastModifiedTime),
        backlog_queue_size=entity.backlogQueueSize,
        locked_by=_optional_text(entity, "lockedBy") or None,
        state=state,
    )
