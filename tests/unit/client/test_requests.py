"""Request building and response parsing, without any I/O."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2, wrappers_pb2

from durabletask import _json_codec
from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._errors import PayloadTooLargeError
from durabletask._grpc.errors import DeadlineExceededError, InvalidArgumentError, NotFoundError
from durabletask._instance_models import EntityQuery, OrchestrationQuery, OrchestrationStatus
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities import EntityInstanceId
from durabletask.serialization import DEFAULT_DATA_CONVERTER

CONV = DEFAULT_DATA_CONVERTER
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def my_orchestrator(ctx: Any, value: Any) -> Any:
    return value


@dataclasses.dataclass
class Order:
    sku: str
    qty: int


def ts(value: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value)
    return out


# ------------------------------------------------------------------------------------------------ schedule


def test_schedule_request_carries_every_argument() -> None:
    req = rq.build_schedule_new_orchestration_request(
        my_orchestrator,
        input=Order("x", 2),
        instance_id="order-1",
        start_at=T0,
        reuse_id_policy=[OrchestrationStatus.COMPLETED, OrchestrationStatus.FAILED],
        tags={"team": "a"},
        version="2.0",
        converter=CONV,
    )
    assert req.method == "StartInstance" and not req.idempotent and req.timeout is None
    msg = req.request
    assert isinstance(msg, pb.CreateInstanceRequest)
    assert msg.name == "my_orchestrator" and msg.instanceId == "order-1"
    assert json.loads(msg.input.value) == {"sku": "x", "qty": 2}
    assert msg.scheduledStartTimestamp.ToDatetime(timezone.utc) == T0
    assert list(msg.orchestrationIdReusePolicy.replaceableStatus) == [
        pb.ORCHESTRATION_STATUS_COMPLETED,
        pb.ORCHESTRATION_STATUS_FAILED,
    ]
    user_tags = {k: v for k, v in msg.tags.items() if not k.startswith("durabletask.fingerprint.")}
    assert user_tags == {"team": "a"} and msg.version.value == "2.0"
    assert msg.tags["durabletask.fingerprint.orchestrator"] == msg.name


@pytest.mark.parametrize(
    "key",
    ["durabletask.fingerprint.orchestrator", "durabletask.fingerprint.input-sha256", "durabletask.fingerprint.x"],
)
def test_a_tag_with_a_reserved_key_is_refused_naming_the_key(key: str) -> None:
    # Otherwise a caller could overwrite the fingerprint, or forge one on an instance attach should refuse.
    with pytest.raises(InvalidArgumentError, match=re.escape(repr(key))) as info:
        rq.build_schedule_new_orchestration_request("flow", tags={"team": "a", key: "forged"}, converter=CONV)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "reserved" in str(info.value)


def test_schedule_defaults_generate_an_id_and_leave_optional_fields_unset() -> None:
    first = rq.build_schedule_new_orchestration_request("flow", converter=CONV).request
    second = rq.build_schedule_new_orchestration_request("flow", converter=CONV).request
    assert len(first.instanceId) == 32 and first.instanceId != second.instanceId
    int(first.instanceId, 16)  # uuid4().hex
    for name in ("input", "version", "scheduledStartTimestamp", "orchestrationIdReusePolicy"):
        assert not first.HasField(name), name


def test_schedule_accepts_the_wire_policy_message() -> None:
    policy = pb.OrchestrationIdReusePolicy(replaceableStatus=[pb.ORCHESTRATION_STATUS_TERMINATED])
    msg = rq.build_schedule_new_orchestration_request("flow", reuse_id_policy=policy, converter=CONV).request
    assert list(msg.orchestrationIdReusePolicy.replaceableStatus) == [pb.ORCHESTRATION_STATUS_TERMINATED]


def test_naive_start_time_is_taken_as_utc() -> None:
    naive = datetime(2026, 1, 2, 3, 4, 5)
    msg = rq.build_schedule_new_orchestration_request("flow", start_at=naive, converter=CONV).request
    assert msg.scheduledStartTimestamp.ToDatetime(timezone.utc) == T0


@pytest.mark.parametrize(
    ("kwargs", "error", "mentions"),
    [
        ({"instance_id": ""}, ValueError, "instance_id"),
        ({"instance_id": "x" * 1025}, ValueError, "instance_id"),
        ({"instance_id": "a\nb"}, ValueError, "instance_id"),
        ({"instance_id": 7}, TypeError, "instance_id"),
        ({"start_at": "tomorrow"}, TypeError, "start_at"),
        ({"tags": {"a": 1}}, TypeError, "tags"),
        ({"reuse_id_policy": ["NOT_A_STATUS"]}, ValueError, "reuse_id_policy"),
        ({"reuse_id_policy": 5}, TypeError, "reuse_id_policy"),
    ],
)
def test_schedule_validation_names_the_argument(kwargs: dict[str, Any], error: type[Exception], mentions: str) -> None:
    with pytest.raises(error, match=mentions):
        rq.build_schedule_new_orchestration_request("flow", converter=CONV, **kwargs)


def test_orchestrator_names_are_validated() -> None:
    with pytest.raises(ValueError, match="lambda"):
        rq.build_schedule_new_orchestration_request(lambda ctx, _: None, converter=CONV)
    with pytest.raises(ValueError, match="orchestrator"):
        rq.build_schedule_new_orchestration_request("", converter=CONV)


def test_oversized_payloads_are_refused_before_sending() -> None:
    big = "x" * _json_codec.MAX_PAYLOAD_BYTES
    with pytest.raises(PayloadTooLargeError) as info:
        rq.build_schedule_new_orchestration_request("flow", input=big, converter=CONV)
    assert info.value.field == "input" and info.value.size > info.value.limit
    with pytest.raises(PayloadTooLargeError, match="data"):
        rq.build_raise_event_request("i", "go", data=big, converter=CONV)
    with pytest.raises(PayloadTooLargeError, match="output"):
        rq.build_terminate_orchestration_request("i", output=big, converter=CONV)
    # Just under the limit still goes through (the JSON quotes add two bytes).
    ok = rq.build_raise_event_request("i", "go", data="x" * (_json_codec.MAX_PAYLOAD_BYTES - 2), converter=CONV)
    assert len(ok.request.input.value) == _json_codec.MAX_PAYLOAD_BYTES


# ------------------------------------------------------------------------------------------- other builders


def test_wait_requests_carry_the_timeout_and_are_idempotent() -> None:
    req = rq.build_wait_request("WaitForInstanceCompletion", "i", fetch_payloads=True, timeout=7)
    assert req.timeout == 7.0 and req.idempotent
    assert req.request.instanceId == "i" and req.request.getInputsAndOutputs
    assert rq.build_wait_request("WaitForInstanceStart", "i", fetch_payloads=False, timeout=None).timeout is None


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_wait_timeouts_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        rq.build_wait_request("WaitForInstanceStart", "i", fetch_payloads=False, timeout=bad)


def test_wait_timeout_type_is_checked() -> None:
    with pytest.raises(TypeError, match="timeout"):
        rq.build_wait_request("WaitForInstanceStart", "i", fetch_payloads=False, timeout="5")  # type: ignore[arg-type]


def test_simple_instance_requests() -> None:
    assert rq.build_suspend_orchestration_request("i", reason="r").request == pb.SuspendRequest(
        instanceId="i", reason=wrappers_pb2.StringValue(value="r")
    )
    assert rq.build_resume_orchestration_request("i").request == pb.ResumeRequest(instanceId="i")
    assert rq.build_rewind_orchestration_request("i", reason="x").request.reason.value == "x"
    restart = rq.build_restart_orchestration_request("i", restart_with_new_instance_id=True)
    assert restart.request.restartWithNewInstanceId
    term = rq.build_terminate_orchestration_request("i", output={"a": 1}, converter=CONV).request
    assert term.recursive and json.loads(term.output.value) == {"a": 1}
    purge = rq.build_purge_orchestration_request("i").request
    assert purge.instanceId == "i" and purge.recursive and purge.isOrchestration


def test_event_names_are_required() -> None:
    with pytest.raises(ValueError, match="event_name"):
        rq.build_raise_event_request("i", "", converter=CONV)


def test_purge_by_filter() -> None:
    req = rq.build_purge_orchestrations_by_request(
        T0, T0 + timedelta(hours=1), [OrchestrationStatus.COMPLETED], True, timedelta(seconds=30)
    ).request
    f = req.purgeInstanceFilter
    assert f.createdTimeFrom.ToDatetime(timezone.utc) == T0 and f.timeout.seconds == 30
    assert list(f.runtimeStatus) == [pb.ORCHESTRATION_STATUS_COMPLETED] and req.recursive
    with pytest.raises(ValueError, match="timeout"):
        rq.build_purge_orchestrations_by_request(timeout=timedelta(0))


def test_list_instance_ids_round_trip() -> None:
    req = rq.build_list_instance_ids_request([OrchestrationStatus.FAILED], T0, None, 10, "k1").request
    assert req.pageSize == 10 and req.lastInstanceKey.value == "k1" and not req.HasField("completedTimeTo")
    page = rq.parse_list_instance_ids_response(
        pb.ListInstanceIdsResponse(instanceIds=["a", "b"], lastInstanceKey=wrappers_pb2.StringValue(value="b"))
    )
    assert page.items == ["a", "b"] and page.continuation_token == "b"
    assert rq.parse_list_instance_ids_response(pb.ListInstanceIdsResponse()).continuation_token is None
    with pytest.raises(ValueError, match="page_size"):
        rq.build_list_instance_ids_request(page_size=-1)


def test_query_request_maps_every_filter() -> None:
    query = OrchestrationQuery(
        created_time_from=T0,
        runtime_status=[OrchestrationStatus.RUNNING],
        max_instance_count=5,
        fetch_inputs_and_outputs=True,
        instance_id_prefix="order-",
    )
    q = rq.build_query_instances_request(query, "tok").request.query
    assert q.maxInstanceCount == 5 and q.fetchInputsAndOutputs and q.instanceIdPrefix.value == "order-"
    assert q.continuationToken.value == "tok" and list(q.runtimeStatus) == [pb.ORCHESTRATION_STATUS_RUNNING]


@pytest.mark.parametrize(
    ("token", "previous", "expected"), [("", None, None), ("0", None, None), ("a", "a", None), ("b", "a", "b")]
)
def test_continuation_tokens(token: str, previous: str | None, expected: str | None) -> None:
    assert rq.next_token(wrappers_pb2.StringValue(value=token), previous) == expected


# ------------------------------------------------------------------------------------------------ entities


def test_signal_entity_request() -> None:
    req = rq.build_signal_entity_request(EntityInstanceId("Counter", "k"), "add", 5, T0, converter=CONV).request
    assert req.instanceId == "@counter@k" and req.name == "add" and req.input.value == "5"
    assert req.scheduledTime.ToDatetime(timezone.utc) == T0 and len(req.requestId) == 36
    with pytest.raises(ValueError, match="operation_name"):
        rq.build_signal_entity_request(EntityInstanceId("c", "k"), "", converter=CONV)
    with pytest.raises(TypeError, match="entity_instance_id"):
        rq.build_get_entity_request(42)  # type: ignore[arg-type]


def test_entity_query_and_metadata_parsing() -> None:
    q = rq.build_query_entities_request(EntityQuery(instance_id_starts_with="@counter", page_size=3)).request.query
    assert q.pageSize.value == 3 and q.instanceIdStartsWith.value == "@counter" and q.includeState
    assert not rq.build_query_entities_request(EntityQuery()).request.query.HasField("pageSize")
    response = pb.QueryEntitiesResponse(
        entities=[
            pb.EntityMetadata(
                instanceId="@counter@a",
                lastModifiedTime=ts(T0),
                backlogQueueSize=2,
                lockedBy=wrappers_pb2.StringValue(value="@lock@x"),
                serializedState=wrappers_pb2.StringValue(value='{"n": 3}'),
            )
        ],
        continuationToken=wrappers_pb2.StringValue(value="next"),
    )
    entities, token = rq.parse_query_entities_response(response, True, CONV, None)
    assert token == "next"
    (entity,) = entities
    assert entity.id == EntityInstanceId("counter", "a") and entity.last_modified == T0
    assert entity.backlog_queue_size == 2 and entity.get_locked_by() == EntityInstanceId("lock", "x")
    assert entity.get_state() == '{"n": 3}' and entity.get_typed_state() == {"n": 3}


def test_get_entity_parsing_absent_and_without_state() -> None:
    assert rq.parse_get_entity_response(pb.GetEntityResponse(exists=False), True, CONV) is None
    meta = pb.EntityMetadata(instanceId="@c@k", serializedState=wrappers_pb2.StringValue(value="1"))
    entity = rq.parse_get_entity_response(pb.GetEntityResponse(exists=True, entity=meta), False, CONV)
    assert entity is not None and not entity.includes_state and entity.get_state() is None


# ---------------------------------------------------------------------------------------------- operations


def drive(operation: ops.Operation[Any], responses: list[Any]) -> tuple[Any, list[rq.RpcRequest]]:
    """Run an operation against canned responses; an exception in ``responses`` is thrown in."""
    sent: list[rq.RpcRequest] = []
    try:
        request = next(operation)
        for response in responses:
            sent.append(request)
            request = operation.throw(response) if isinstance(response, Exception) else operation.send(response)
    except StopIteration as done:
        return done.value, sent
    raise AssertionError("operation wanted more responses")


def test_query_operation_follows_pages_until_the_token_runs_out() -> None:
    def page(ids: list[str], token: str | None) -> pb.QueryInstancesResponse:
        states = [pb.OrchestrationState(instanceId=i, name="flow") for i in ids]
        return pb.QueryInstancesResponse(
            orchestrationState=states, continuationToken=wrappers_pb2.StringValue(value=token) if token else None
        )

    result, sent = drive(
        ops.get_all_orchestration_states(None, converter=CONV),
        [page(["a"], "t1"), page(["b", "c"], "t2"), page([], None)],
    )
    assert [s.instance_id for s in result] == ["a", "b", "c"]
    assert [r.request.query.continuationToken.value for r in sent] == ["", "t1", "t2"]


def test_clean_entity_storage_sums_batches() -> None:
    batches = [
        pb.CleanEntityStorageResponse(
            emptyEntitiesRemoved=2, orphanedLocksReleased=1, continuationToken=wrappers_pb2.StringValue(value="c")
        ),
        pb.CleanEntityStorageResponse(emptyEntitiesRemoved=3),
    ]
    result, sent = drive(ops.clean_entity_storage(True, False), batches)
    assert (result.empty_entities_removed, result.orphaned_locks_released) == (5, 1)
    assert sent[1].request.continuationToken.value == "c" and not sent[0].request.releaseOrphanedLocks


def test_a_wait_that_runs_out_becomes_a_timeout_naming_the_instance() -> None:
    op = ops.wait_for_orchestration("WaitForInstanceCompletion", "abc", fetch_payloads=True, timeout=2, converter=CONV)
    with pytest.raises(TimeoutError, match="'abc' to complete"):
        drive(op, [DeadlineExceededError("deadline")])


def test_other_errors_pass_through_operations_unchanged() -> None:
    error = NotFoundError("gone")
    with pytest.raises(NotFoundError) as info:
        drive(ops.get_orchestration_state("x", fetch_payloads=True, converter=CONV), [error])
    assert info.value is error


def test_get_state_reports_the_requested_instance_id() -> None:
    response = pb.GetInstanceResponse(
        exists=True, orchestrationState=pb.OrchestrationState(instanceId="server-side", name="flow")
    )
    state, _ = drive(ops.get_orchestration_state("asked", fetch_payloads=True, converter=CONV), [response])
    assert state.instance_id == "asked"
    missing, _ = drive(
        ops.get_orchestration_state("asked", fetch_payloads=True, converter=CONV), [pb.GetInstanceResponse()]
    )
    assert missing is None
