"""Public history events convert back to protocol events without losing a field, for every event kind."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from durabletask import history as h
from durabletask._grpc.convert import history_event_from_pb
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.failures import FailureDetails
from durabletask._replay_check.events import failure_to_pb, history_event_to_pb, record_to_pb
from durabletask.extensions.history_export.serialization import event_to_dict

KINDS = [f.name for f in pb.HistoryEvent.DESCRIPTOR.oneofs_by_name["eventType"].fields]
WHEN = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc)


def _populate(message: Message, depth: int = 0) -> None:
    """Every field of ``message`` set to a value of its type (nested messages too, a few levels down)."""
    for field in message.DESCRIPTOR.fields:
        if field.is_repeated:
            _populate_repeated(message, field)
        elif field.message_type is not None:
            _populate_message(message, field, depth)
        else:
            setattr(message, field.name, _SCALARS[field.type](field.name))


_SCALARS: dict[int, Any] = {
    FieldDescriptor.TYPE_STRING: lambda name: f"{name}-value",
    FieldDescriptor.TYPE_BOOL: lambda name: True,
    FieldDescriptor.TYPE_ENUM: lambda name: 1,
    FieldDescriptor.TYPE_INT32: lambda name: 7,
    FieldDescriptor.TYPE_INT64: lambda name: 7,
}


def _populate_repeated(message: Message, field: Any) -> None:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        if entry.fields_by_name["value"].message_type is None:  # string maps (tags)
            getattr(message, field.name).update({"k1": "v1", "k2": "v2"})
    elif entry is None and field.type == FieldDescriptor.TYPE_STRING:
        getattr(message, field.name).extend(["a", "b"])
    # Repeated messages (carryover events) are not part of any history event's model.


def _populate_message(message: Message, field: Any, depth: int) -> None:
    nested = getattr(message, field.name)
    kind = field.message_type.full_name
    if kind == "google.protobuf.Timestamp":
        nested.FromDatetime(WHEN)
    elif kind == "google.protobuf.StringValue":
        nested.value = f"{field.name}-text"
    elif kind == "OrchestrationState":
        nested.instanceId, nested.name = "state-of", "snapshot"
    elif depth < 3:
        _populate(nested, depth + 1)


def _full_event(kind: str) -> pb.HistoryEvent:
    event = pb.HistoryEvent(eventId=42)
    event.timestamp.FromDatetime(WHEN)
    body = getattr(event, kind)
    body.SetInParent()
    _populate(body)
    if kind in ("taskFailed", "subOrchestrationInstanceFailed", "entityOperationFailed", "executionCompleted"):
        # isNonRetriable is not part of the public failure model; the rest of the failure is.
        body.failureDetails.isNonRetriable = False
        body.failureDetails.properties["answer"].number_value = 42
    return event


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_of_the_public_model_survives_the_way_back(kind: str) -> None:
    model = history_event_from_pb(_full_event(kind))
    back = history_event_to_pb(model)
    assert back.WhichOneof("eventType") == kind
    assert history_event_from_pb(back) == model
    # The model really carried data: a converter that dropped everything would compare equal on empty events.
    assert any(getattr(model, f.name) not in (None, "", [], {}) for f in dataclasses.fields(model)[2:]) or kind in (
        "orchestratorStarted",
        "orchestratorCompleted",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_survives_the_way_back_from_an_export_record(kind: str) -> None:
    model = history_event_from_pb(_full_event(kind))
    record = json.loads(json.dumps(event_to_dict(model)))  # as an export file holds it
    assert history_event_from_pb(record_to_pb(record)) == model
    dumped = {"type": record.pop("event_type"), **record}  # as `durabletask history --json` prints it
    assert history_event_from_pb(record_to_pb(dumped, kind_key="type")) == model


def test_a_record_without_its_class_or_with_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValueError, match="needs its class name under 'event_type'"):
        record_to_pb({"event_id": 1, "timestamp": WHEN.isoformat()})
    with pytest.raises(ValueError, match="no 'timestamp'"):
        record_to_pb({"event_type": "TimerFiredEvent", "event_id": 1})
    with pytest.raises(ValueError, match="no protocol field for 'color'"):
        record_to_pb({"event_type": "TimerFiredEvent", "event_id": 1, "timestamp": WHEN.isoformat(), "color": 1})


def test_the_scheduling_fields_replay_reads_are_restored_exactly() -> None:
    original = _full_event("taskScheduled")
    back = history_event_to_pb(history_event_from_pb(original))
    assert back.eventId == 42
    assert back.timestamp == original.timestamp
    assert back.taskScheduled.name == original.taskScheduled.name
    assert back.taskScheduled.input.value == original.taskScheduled.input.value
    assert dict(back.taskScheduled.tags) == dict(original.taskScheduled.tags)


def test_a_naive_timestamp_is_taken_as_utc() -> None:
    event = h.TimerCreatedEvent(event_id=3, timestamp=datetime(2026, 1, 1), fire_at=datetime(2026, 1, 2))
    back = history_event_to_pb(event)
    assert back.timestamp.ToDatetime(tzinfo=timezone.utc) == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert back.timerCreated.fireAt.ToDatetime(tzinfo=timezone.utc) == datetime(2026, 1, 2, tzinfo=timezone.utc)


def test_failure_details_keep_their_chain_and_properties() -> None:
    inner = FailureDetails("inner", "builtins.KeyError", None)
    outer = FailureDetails("outer", "builtins.ValueError", "trace", inner, {"retry": {"after": 5}})
    details = failure_to_pb(outer)
    assert details.innerFailure.errorMessage == "inner"
    assert details.stackTrace.value == "trace"
    assert not details.innerFailure.HasField("stackTrace")
    assert details.properties["retry"].struct_value.fields["after"].number_value == 5


def test_an_event_class_the_protocol_does_not_know_is_refused() -> None:
    @dataclasses.dataclass
    class MadeUpEvent(h.HistoryEvent):
        pass

    with pytest.raises(ValueError, match="MadeUpEvent is not a history event kind"):
        history_event_to_pb(MadeUpEvent(1, WHEN))
