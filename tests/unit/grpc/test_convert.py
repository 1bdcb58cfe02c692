"""Proto ⇄ model conversion: states, failures, entities and every history event kind."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone

import pytest
from google.protobuf import struct_pb2, timestamp_pb2, wrappers_pb2
from hypothesis import given
from hypothesis import strategies as st

from durabletask import history
from durabletask._attach.fingerprint import Fingerprint
from durabletask._errors import ProtocolError
from durabletask._grpc import convert
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.client import (
    OrchestrationFailedError,
    OrchestrationStatus,
    new_orchestration_state,
    new_purge_instances_result,
    parse_orchestration_state,
)
from durabletask.entities import EntityInstanceId, EntityMetadata

T0 = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=timezone.utc)


def ts(value: datetime = T0) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value)
    return out


def sv(value: str) -> wrappers_pb2.StringValue:
    return wrappers_pb2.StringValue(value=value)


def failure(message: str = "boom", inner: pb.TaskFailureDetails | None = None) -> pb.TaskFailureDetails:
    details = pb.TaskFailureDetails(errorType="builtins.ValueError", errorMessage=message, stackTrace=sv("tb"))
    if inner is not None:
        details.innerFailure.CopyFrom(inner)
    details.properties["code"].CopyFrom(struct_pb2.Value(number_value=7))
    return details


# ----------------------------------------------------------------------------------------------- scalars


def test_timestamps_are_aware_utc_and_naive_input_means_utc() -> None:
    assert convert.from_timestamp(ts()) == T0 and convert.from_timestamp(ts()).tzinfo is timezone.utc
    assert convert.to_timestamp(T0.replace(tzinfo=None)) == ts()


def test_optional_wrappers() -> None:
    state = pb.OrchestrationState(version=sv(""), input=sv(""))
    assert convert.optional_string(state, "version") == "" and convert.optional_string(state, "output") is None
    assert convert.payload_string(state, "input") is None  # an empty payload is no payload
    assert convert.string_value(None) is None and convert.string_value("a") == sv("a")


# ------------------------------------------------------------------------------------------------ states


def full_state(**overrides: object) -> pb.OrchestrationState:
    state = pb.OrchestrationState(
        instanceId="i1",
        name="flow",
        version=sv("1.0"),
        orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED,
        scheduledStartTimestamp=ts(),
        createdTimestamp=ts(),
        lastUpdatedTimestamp=ts(),
        completedTimestamp=ts(),
        input=sv('{"a": 1}'),
        output=sv("[1, 2]"),
        customStatus=sv('"half"'),
        failureDetails=failure(inner=failure("root")),
        executionId=sv("e1"),
        parentInstanceId=sv("parent"),
        tags={"k": "v"},
    )
    for key, value in overrides.items():
        setattr(state, key, value)
    return state


def test_orchestration_state_carries_every_field() -> None:
    state = parse_orchestration_state(full_state())
    assert (state.instance_id, state.name, state.runtime_status) == ("i1", "flow", OrchestrationStatus.FAILED)
    naive = T0.replace(tzinfo=None)  # instance times are naive UTC, as in the compatible API
    assert state.created_at == naive and state.last_updated_at == naive and state.completed_at == naive
    assert state.scheduled_start_at == naive and state.version == "1.0" and state.execution_id == "e1"
    assert state.parent_instance_id == "parent" and state.tags == {"k": "v"}
    assert state.get_input() == {"a": 1} and state.get_output() == [1, 2] and state.get_custom_status() == "half"
    assert state.serialized_output == "[1, 2]"
    details = state.failure_details
    assert details is not None and details.message == "boom" and details.stack_trace == "tb"
    assert details.inner_failure is not None and details.inner_failure.message == "root"
    assert details.properties == {"code": 7}


def test_state_tags_are_the_callers_only_and_none_without_any() -> None:
    fingerprint = Fingerprint.compute("flow", None, "1").to_tags()
    msg = full_state()
    msg.tags.update(fingerprint)
    state = parse_orchestration_state(msg)
    assert state.tags == {"k": "v"} and "durabletask.fingerprint" not in repr(state)
    assert Fingerprint.from_tags(state._fingerprint_tags) == Fingerprint.compute("flow", None, "1")
    del msg.tags["k"]
    bare = parse_orchestration_state(msg)
    assert bare.tags is None and bare == dataclasses.replace(bare)
    assert Fingerprint.from_tags(dataclasses.replace(bare)._fingerprint_tags) is not None


def test_raise_if_failed() -> None:
    failed = parse_orchestration_state(full_state())
    with pytest.raises(OrchestrationFailedError, match="'i1' failed: boom") as info:
        failed.raise_if_failed()
    assert info.value.failure_details is failed.failure_details
    ok = parse_orchestration_state(pb.OrchestrationState(instanceId="i2", orchestrationStatus=1))
    ok.raise_if_failed()
    assert ok.failure_details is None and ok.serialized_input is None and ok.tags is None


def test_typed_payload_access() -> None:
    @dataclasses.dataclass
    class Box:
        a: int

    state = parse_orchestration_state(full_state())
    assert state.get_input(Box) == Box(a=1)


def test_unknown_status_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="status 42"):
        parse_orchestration_state(pb.OrchestrationState(orchestrationStatus=42))  # type: ignore[arg-type]


def test_status_names_and_terminal_flags() -> None:
    assert str(OrchestrationStatus.COMPLETED) == "COMPLETED"
    assert OrchestrationStatus.TERMINATED.is_terminal and not OrchestrationStatus.SUSPENDED.is_terminal


def test_legacy_helpers() -> None:
    response = pb.GetInstanceResponse(exists=True, orchestrationState=full_state())
    state = new_orchestration_state("asked", response)
    assert state is not None and state.instance_id == "asked"
    assert new_orchestration_state("x", pb.GetInstanceResponse()) is None
    purged = new_purge_instances_result(pb.PurgeInstancesResponse(deletedInstanceCount=3))
    assert (purged.deleted_instance_count, purged.is_complete) == (3, None)
    done = new_purge_instances_result(pb.PurgeInstancesResponse(isComplete=wrappers_pb2.BoolValue(value=False)))
    assert done.is_complete is False


# ---------------------------------------------------------------------------------------------- entities


def test_entity_ids() -> None:
    entity = EntityInstanceId("Counter", "user@example")
    assert str(entity) == "@counter@user@example" and entity.entity == "counter"
    assert EntityInstanceId.parse(str(entity)) == entity and hash(entity) == hash(EntityInstanceId.parse(str(entity)))
    assert EntityInstanceId("a", "1") < EntityInstanceId("b", "0")
    assert EntityInstanceId("a", "1") != "@a@1"


@pytest.mark.parametrize(("text", "message"), [("counter@k", "start with '@'"), ("@counter", "form"), ("@@k", "empty")])
def test_entity_id_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EntityInstanceId.parse(text)


@pytest.mark.parametrize(("name", "key", "message"), [("", "k", "name"), ("a@b", "k", "'@'"), ("a", "", "key")])
def test_entity_id_validation(name: str, key: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EntityInstanceId(name, key)


def test_entity_metadata_accessors() -> None:
    meta = EntityMetadata.from_entity_metadata(
        pb.EntityMetadata(instanceId="@c@k", lastModifiedTime=ts(), serializedState=sv("5")), True
    )
    assert meta.get_state() == "5" and meta.get_state(int) == 5 and meta.get_typed_state(int) == 5
    assert meta.get_locked_by() is None and meta.last_modified == T0
    with pytest.raises(TypeError, match="dict"):
        meta.get_state(dict)
    with pytest.raises(ProtocolError, match="entity ID"):
        EntityMetadata.from_entity_metadata(pb.EntityMetadata(instanceId="plain"), False)


# ----------------------------------------------------------------------------------------------- history

KINDS = [f.name for f in pb.HistoryEvent.DESCRIPTOR.oneofs_by_name["eventType"].fields]


@pytest.mark.parametrize("kind", KINDS)
def test_every_history_event_kind_converts(kind: str) -> None:
    event = pb.HistoryEvent(eventId=4, timestamp=ts())
    getattr(event, kind).SetInParent()
    converted = convert.history_event_from_pb(event)
    assert isinstance(converted, history.HistoryEvent)
    expected = kind[0].upper() + kind[1:]
    assert type(converted).__name__ == (expected if expected.endswith("Event") else expected + "Event")
    assert (converted.event_id, converted.timestamp) == (4, T0)
    json.dumps(converted.to_dict())  # plain JSON data


def test_history_event_details() -> None:
    started = pb.HistoryEvent(
        eventId=-1,
        timestamp=ts(),
        executionStarted=pb.ExecutionStartedEvent(
            name="flow",
            input=sv("1"),
            orchestrationInstance=pb.OrchestrationInstance(instanceId="i", executionId=sv("e")),
            parentInstance=pb.ParentInstanceInfo(taskScheduledId=3, name=sv("parent")),
            tags={"t": "1"},
        ),
    )
    event = convert.history_event_from_pb(started)
    assert isinstance(event, history.ExecutionStartedEvent)
    assert event.orchestration_instance == history.OrchestrationInstance("i", "e")
    assert event.parent_instance is not None and event.parent_instance.name == "parent"
    assert event.tags == {"t": "1"} and event.version is None
    started.executionStarted.tags.update(Fingerprint.compute("flow", None, "1").to_tags())
    assert convert.history_event_from_pb(started).tags == {"t": "1"}  # the fingerprint is not a caller's tag
    del started.executionStarted.tags["t"]
    assert convert.history_event_from_pb(started).tags is None
    as_dict = history.to_dict(event)
    assert as_dict["timestamp"] == T0.isoformat() and as_dict["orchestration_instance"]["execution_id"] == "e"

    failed = pb.HistoryEvent(eventId=2, taskFailed=pb.TaskFailedEvent(taskScheduledId=1, failureDetails=failure()))
    task_failed = convert.history_event_from_pb(failed)
    assert isinstance(task_failed, history.TaskFailedEvent)
    assert task_failed.failure_details is not None and task_failed.failure_details.error_type == "builtins.ValueError"
    assert task_failed.to_dict()["failure_details"]["message"] == "boom"


def test_history_event_without_kind_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="no event type"):
        convert.history_event_from_pb(pb.HistoryEvent(eventId=1))


@given(
    name=st.text(min_size=1, max_size=20).filter(lambda s: "@" not in s),
    key=st.text(min_size=1, max_size=40),
)
def test_entity_ids_round_trip_through_their_wire_form(name: str, key: str) -> None:
    entity = EntityInstanceId(name, key)
    assert EntityInstanceId.parse(str(entity)) == entity
    assert entity.entity == name.lower() and entity.key == key
