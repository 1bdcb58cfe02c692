"""Public history events (``durabletask.history``) back to protocol events, so that what clients and files return
can be replayed by the executor, which reads protocol events."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import Any

from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

from durabletask import history as h
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.failures import FailureDetails

# Field names that are not the camel case of the model's name.
_RENAMED = {"span_id": "spanID", "orchestration_span_id": "orchestrationSpanID"}
# The ``eventType`` oneof field of each protocol event message, by message name (which is the model's class name).
_KIND_BY_MESSAGE = {
    f.message_type.name: f.name
    for f in pb.HistoryEvent.DESCRIPTOR.oneofs_by_name["eventType"].fields
    if f.message_type is not None
}


def _camel(name: str) -> str:
    renamed = _RENAMED.get(name)
    if renamed is not None:
        return renamed
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def failure_to_pb(details: FailureDetails, target: pb.TaskFailureDetails | None = None) -> pb.TaskFailureDetails:
    """The wire failure details for the public model (inner failures and properties included)."""
    out = target if target is not None else pb.TaskFailureDetails()
    out.errorMessage = details.message
    out.errorType = details.error_type
    if details.stack_trace is not None:
        out.stackTrace.value = details.stack_trace
    if details.inner_failure is not None:
        failure_to_pb(details.inner_failure, out.innerFailure)
    for key, value in (details.properties or {}).items():
        out.properties[str(key)].CopyFrom(json_format.ParseDict(value, struct_pb2.Value()))
    return out


def _timestamp(value: datetime) -> datetime:
    # Export files and JSON dumps may carry naive times; the history model means UTC.
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _fill(message: Message, model: Any) -> None:
    """Copy a model dataclass's set fields into ``message``, guided by the message's field descriptors."""
    fields = message.DESCRIPTOR.fields_by_name
    for item in dataclasses.fields(model):
        value = getattr(model, item.name)
        if value is None or item.name in ("event_id", "timestamp"):
            continue
        name = _camel(item.name)
        field = fields.get(name)
        if field is None:
            raise ValueError(f"{type(model).__name__}.{item.name} has no protocol field {name!r}")
        _set(message, field, value)


def _set(message: Message, field: Any, value: Any) -> None:
    name = field.name
    nested_type = field.message_type
    kind = nested_type.full_name if nested_type is not None else None
    if field.is_repeated:
        if nested_type is not None and nested_type.GetOptions().map_entry:
            getattr(message, name).update(value)
        else:
            getattr(message, name).extend(value)
    elif kind == "google.protobuf.StringValue":
        getattr(message, name).value = value
    elif kind == "google.protobuf.Timestamp":
        getattr(message, name).FromDatetime(_timestamp(value))
    elif kind == "TaskFailureDetails":
        failure_to_pb(value, getattr(message, name))
    elif kind is not None and isinstance(value, dict):
        json_format.ParseDict(value, getattr(message, name))  # a snapshot kept as the wire fields
    elif kind is not None:
        nested = getattr(message, name)
        nested.SetInParent()
        _fill(nested, value)
    else:
        setattr(message, name, value)


def history_event_to_pb(event: h.HistoryEvent) -> pb.HistoryEvent:
    """The protocol event for a public history event.

    Raises:
        ValueError: the event is of a class the protocol has no event kind for.
    """
    kind = _KIND_BY_MESSAGE.get(type(event).__name__)
    if kind is None:
        raise ValueError(f"{type(event).__name__} is not a history event kind of the protocol")
    out = pb.HistoryEvent(eventId=event.event_id)
    out.timestamp.FromDatetime(_timestamp(event.timestamp))
    body = getattr(out, kind)
    body.SetInParent()  # events without fields (orchestratorStarted) are still of their kind
    _fill(body, event)
    return out
