"""Public history events back to protocol events, so that the executor (which reads protocol events) can replay what
clients return (``durabletask.history`` classes) and what export files and JSON dumps hold (those classes' fields as
JSON, the event's class named by ``event_type``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from google.protobuf import json_format, struct_pb2, timestamp_pb2
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
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Written apart (the event's ID and time) or naming the event's class (export records, history --json items).
_NOT_FIELDS = frozenset({"event_id", "timestamp", "event_type", "type"})

# How one model field is written into its message, by (message type, model field name): a value of the model, or
# its JSON form, goes in through the setter (built once from the field's descriptor).
_Setter = Callable[[Message, Any], object]
_setters: dict[tuple[str, str], _Setter | None] = {}
# For the model classes: their fields' setters, in field order.
_plans: dict[type[Any], tuple[tuple[str, _Setter], ...]] = {}


def _camel(name: str) -> str:
    renamed = _RENAMED.get(name)
    if renamed is not None:
        return renamed
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def failure_to_pb(
    details: FailureDetails | dict[str, Any], target: pb.TaskFailureDetails | None = None
) -> pb.TaskFailureDetails:
    """The wire failure details for the public model or its JSON form (inner failures and properties included)."""
    if isinstance(details, dict):
        details = _failure_model(details)
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


def _failure_model(data: Mapping[str, Any]) -> FailureDetails:
    inner = data.get("inner_failure")
    return FailureDetails(
        data.get("message") or "",
        data.get("error_type") or "",
        data.get("stack_trace"),
        None if inner is None else _failure_model(inner),
        data.get("properties"),
    )


def set_timestamp(target: timestamp_pb2.Timestamp, value: datetime | str) -> None:
    """``target`` set to ``value`` (an ISO 8601 text in JSON); naive times are UTC, as the history model means."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    # Computed here rather than with FromDatetime, which costs several times as much, for every event replayed.
    delta = aware - _EPOCH
    target.seconds = delta.days * 86_400 + delta.seconds
    target.nanos = delta.microseconds * 1000


def _setter(name: str, field: Any) -> _Setter:
    """How a value is written into the field named ``name``, by the field's descriptor."""
    nested = field.message_type
    kind = nested.full_name if nested is not None else None
    if field.is_repeated:
        if nested is not None and nested.GetOptions().map_entry:
            return lambda message, value: getattr(message, name).update(value)
        return lambda message, value: getattr(message, name).extend(value)
    if kind == "google.protobuf.StringValue":
        return lambda message, value: setattr(getattr(message, name), "value", value)
    if kind == "google.protobuf.Timestamp":
        return lambda message, value: set_timestamp(getattr(message, name), value)
    if kind == "TaskFailureDetails":
        return lambda message, value: failure_to_pb(value, getattr(message, name))
    if kind == "OrchestrationState":  # a snapshot, kept in the model as the wire fields
        return lambda message, value: json_format.ParseDict(value, getattr(message, name))
    if kind is not None:
        return lambda message, value: _fill(getattr(message, name), value)
    return lambda message, value: setattr(message, name, value)


def _setter_for(message: Message, attribute: str) -> _Setter | None:
    descriptor = message.DESCRIPTOR
    key = (descriptor.full_name, attribute)
    try:
        return _setters[key]
    except KeyError:
        pass
    field = descriptor.fields_by_name.get(_camel(attribute))
    found = None if field is None else _setter(field.name, field)
    _setters[key] = found
    return found


def _plan(message: Message, model_type: type[Any]) -> tuple[tuple[str, _Setter], ...]:
    """The model class's fields that have a setter into ``message``'s type, worked out once per class."""
    plan = _plans.get(model_type)
    if plan is None:
        steps = []
        for item in dataclasses.fields(model_type):
            if item.name in _NOT_FIELDS:
                continue
            write = _setter_for(message, item.name)
            if write is None:
                raise ValueError(f"{type(message).__name__} has no protocol field for {item.name!r}")
            steps.append((item.name, write))
        plan = _plans[model_type] = tuple(steps)
    return plan


def _fill(message: Message, model: Any) -> None:
    """Copy a model dataclass's set fields (or the fields of its JSON form) into ``message``."""
    message.SetInParent()  # an empty nested message is still present
    if not isinstance(model, dict):  # a model dataclass (JSON forms are plain dicts; dict is faster to test)
        for attribute, write in _plan(message, type(model)):
            value = getattr(model, attribute)
            if value is not None:
                write(message, value)
        return
    for attribute, value in model.items():
        if value is None or attribute in _NOT_FIELDS:
            continue
        found = _setter_for(message, attribute)
        if found is None:
            raise ValueError(f"{type(message).__name__} has no protocol field for {attribute!r}")
        found(message, value)


def _event(kind_name: str, event_id: int, timestamp: datetime | str, body: Any) -> pb.HistoryEvent:
    kind = _KIND_BY_MESSAGE.get(kind_name)
    if kind is None:
        raise ValueError(f"{kind_name} is not a history event kind of the protocol")
    out = pb.HistoryEvent(eventId=event_id)
    set_timestamp(out.timestamp, timestamp)
    _fill(getattr(out, kind), body)
    return out


def history_event_to_pb(event: h.HistoryEvent) -> pb.HistoryEvent:
    """The protocol event for a public history event.

    Raises:
        ValueError: the event is of a class the protocol has no event kind for.
    """
    return _event(type(event).__name__, event.event_id, event.timestamp, event)


def record_to_pb(record: Mapping[str, Any], kind_key: str = "event_type") -> pb.HistoryEvent:
    """The protocol event for an event's JSON form (an export file's record, or ``history --json``'s item, whose
    class name is under ``type``).

    Raises:
        ValueError: the record names no event class of the protocol, or has fields its event kind has not.
    """
    kind_name = record.get(kind_key)
    if not isinstance(kind_name, str):
        raise ValueError(f"a history event record needs its class name under {kind_key!r}")
    try:
        return _event(kind_name, int(record["event_id"]), record["timestamp"], record)
    except KeyError as missing:
        raise ValueError(f"a {kind_name} record has no {missing}") from None
