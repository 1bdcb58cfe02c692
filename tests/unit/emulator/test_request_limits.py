"""The request limits one by one: each refuses just past its value, naming the field and the limit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dtscale_emulator.engine.pages import PAGE_BYTES, Page, wire_size
from dtscale_emulator.engine.work_size import taken_within
from dtscale_emulator.errors import InvalidArgumentError
from dtscale_emulator.limits import (
    MAX_ACTIONS_PER_TURN,
    FieldTooLargeError,
    Limits,
    RefusedContentError,
    TimestampOutOfRangeError,
    TooManyActionsError,
)
from dtscale_emulator.protocol import StringValue, Timestamp, pb
from dtscale_emulator.storage import Message

pytestmark = pytest.mark.adversarial

LIMITS = Limits()


def sv(value: str) -> StringValue:
    return StringValue(value=value)


def _refused(check: Callable[[], None], kind: type[Exception] = FieldTooLargeError) -> str:
    with pytest.raises(kind) as info:
        check()
    assert isinstance(info.value, InvalidArgumentError)
    return str(info.value)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            pb.CreateInstanceRequest(instanceId="i", name="n" * 1025),
            "name is 1025 characters; the limit is 1024",
        ),
        (
            pb.CreateInstanceRequest(instanceId="i", name="n", version=sv("v" * 257)),
            "version is 257 characters; the limit is 256",
        ),
        (
            pb.CreateInstanceRequest(instanceId="i", name="n", executionId=sv("e" * 257)),
            "executionId is 257 characters; the limit is 256",
        ),
        (
            pb.CreateInstanceRequest(name="n", tags={f"k{i}": "v" for i in range(65)}),
            "tags has 65 entries; the limit is 64",
        ),
        (
            pb.CreateInstanceRequest(name="n", tags={"k" * 257: "v"}),
            "tags has a key of 257 characters",
        ),
        (
            pb.CreateInstanceRequest(name="n", tags={"k": "v" * 4097}),
            "tags['k'] is 4097 characters; the limit is 4096",
        ),
        (
            pb.CreateInstanceRequest(name="n", tags={f"k{i:02}": "v" * 4000 for i in range(17)}),
            "tags is 68051 bytes (keys and values, UTF-8); the limit is 65536 bytes",
        ),
        (
            pb.CreateInstanceRequest(name="n", parentTraceContext=pb.TraceContext(traceParent="t" * 1025)),
            "parentTraceContext.traceParent is 1025 characters; the limit is 1024",
        ),
        (
            pb.RaiseEventRequest(instanceId="i", name="e" * 1025),
            "name is 1025 characters; the limit is 1024",
        ),
        (
            pb.SignalEntityRequest(instanceId="@c@k", name="add", requestId="r" * 257),
            "requestId is 257 characters; the limit is 256",
        ),
        (
            pb.GetInstanceRequest(instanceId="i" * 101),
            "instanceId is 101 characters; the limit is 100",
        ),
        (
            pb.SuspendRequest(instanceId="i", reason=sv("r" * (1024 * 1024 + 1))),
            "reason is 1048577 bytes; the limit is 1048576 bytes",
        ),
    ],
)
def test_a_field_over_its_limit_is_refused_naming_both(request_: object, message: str) -> None:
    text = _refused(lambda: LIMITS.message(request_), RefusedContentError)  # type: ignore[arg-type]
    assert message in text


def test_fields_at_their_limits_pass() -> None:
    LIMITS.message(
        pb.CreateInstanceRequest(
            instanceId="i" * 100,
            name="n" * 1024,
            version=sv("v" * 256),
            tags={f"k{i:02}": "v" * 1000 for i in range(64)},
            parentTraceContext=pb.TraceContext(traceParent="t" * 1024, traceState=sv("s" * 1024)),
            scheduledStartTimestamp=Timestamp(seconds=253402300799, nanos=999_999_999),
        )
    )


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [(253402300800, 0), (0, -1), (2**62, 0), (-62135596801, 0), (0, 1_000_000_000)],
)
def test_timestamps_outside_what_a_timestamp_holds_are_refused(seconds: int, nanos: int) -> None:
    stamp = Timestamp(seconds=seconds, nanos=nanos)
    text = _refused(
        lambda: LIMITS.message(pb.CreateInstanceRequest(name="n", scheduledStartTimestamp=stamp)),
        TimestampOutOfRangeError,
    )
    assert f"scheduledStartTimestamp is out of range (seconds={seconds}, nanos={nanos})" in text
    assert "9999-12-31T23:59:59.999999999Z" in text


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (
            pb.QueryInstancesRequest(query=pb.InstanceQuery(createdTimeFrom=Timestamp(seconds=2**62))),
            "query.createdTimeFrom",
        ),
        (pb.ListInstanceIdsRequest(completedTimeTo=Timestamp(seconds=2**62)), "completedTimeTo"),
        (
            pb.PurgeInstancesRequest(
                purgeInstanceFilter=pb.PurgeInstanceFilter(createdTimeTo=Timestamp(seconds=2**62))
            ),
            "purgeInstanceFilter.createdTimeTo",
        ),
        (pb.QueryEntitiesRequest(query=pb.EntityQuery(lastModifiedFrom=Timestamp(nanos=-1))), "query.lastModifiedFrom"),
        (pb.SignalEntityRequest(instanceId="@c@k", name="a", scheduledTime=Timestamp(seconds=2**62)), "scheduledTime"),
    ],
)
def test_every_request_timestamp_is_range_checked(request_: object, field: str) -> None:
    assert f"{field} is out of range" in _refused(
        lambda: LIMITS.message(request_),  # type: ignore[arg-type]
        TimestampOutOfRangeError,
    )


def _turn(*actions: pb.OrchestratorAction) -> pb.OrchestratorResponse:
    return pb.OrchestratorResponse(instanceId="i", actions=list(actions))


def test_a_turn_over_the_action_cap_is_refused_as_content() -> None:
    assert MAX_ACTIONS_PER_TURN == 100_000
    small = Limits(max_actions_per_turn=3)
    actions = [pb.OrchestratorAction(id=i, scheduleTask=pb.ScheduleTaskAction(name="A")) for i in range(4)]
    small.orchestrator_response(_turn(*actions[:3]))
    text = _refused(lambda: small.orchestrator_response(_turn(*actions)), TooManyActionsError)
    assert text == "actions holds 4 actions; the limit is 3 per turn"


@pytest.mark.parametrize(
    ("action", "message", "kind"),
    [
        (
            pb.OrchestratorAction(id=2, createTimer=pb.CreateTimerAction(fireAt=Timestamp(seconds=2**62))),
            "actions[2].createTimer.fireAt is out of range",
            TimestampOutOfRangeError,
        ),
        (
            pb.OrchestratorAction(id=3, createSubOrchestration=pb.CreateSubOrchestrationAction(name="s" * 1025)),
            "actions[3].createSubOrchestration.name is 1025 characters; the limit is 1024",
            FieldTooLargeError,
        ),
        (
            pb.OrchestratorAction(
                id=4, createSubOrchestration=pb.CreateSubOrchestrationAction(name="s", instanceId="c" * 101)
            ),
            "actions[4].createSubOrchestration.instanceId is 101 characters; the limit is 100",
            FieldTooLargeError,
        ),
        (
            pb.OrchestratorAction(id=5, scheduleTask=pb.ScheduleTaskAction(name="a", tags={"k": "v" * 5000})),
            "actions[5].scheduleTask.tags['k'] is 5000 characters; the limit is 4096",
            FieldTooLargeError,
        ),
        (
            pb.OrchestratorAction(id=6, sendEvent=pb.SendEventAction(name="e" * 2000)),
            "actions[6].sendEvent.name is 2000 characters; the limit is 1024",
            FieldTooLargeError,
        ),
        (
            pb.OrchestratorAction(
                id=7,
                completeOrchestration=pb.CompleteOrchestrationAction(
                    orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED,
                    failureDetails=pb.TaskFailureDetails(errorType="E", stackTrace=sv("x" * 300_000)),
                ),
            ),
            "actions[7].completeOrchestration.failureDetails is 300",
            FieldTooLargeError,
        ),
        (
            pb.OrchestratorAction(
                id=8,
                completeOrchestration=pb.CompleteOrchestrationAction(
                    orchestrationStatus=pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW, newVersion=sv("v" * 300)
                ),
            ),
            "actions[8].completeOrchestration.newVersion is 300 characters; the limit is 256",
            FieldTooLargeError,
        ),
    ],
)
def test_orchestrator_actions_over_a_limit_are_refused_as_content(
    action: pb.OrchestratorAction, message: str, kind: type[Exception]
) -> None:
    assert message in _refused(lambda: LIMITS.orchestrator_response(_turn(action)), kind)


def test_entity_results_over_a_limit_are_refused_as_content() -> None:
    signal = pb.OperationAction(id=1, sendSignal=pb.SendSignalAction(instanceId="@c@k", name="n" * 1025))
    text = _refused(lambda: LIMITS.entity_batch_result(pb.EntityBatchResult(actions=[signal])))
    assert "actions[0].sendSignal.name is 1025 characters; the limit is 1024" in text
    start = pb.OperationAction(
        id=2,
        startNewOrchestration=pb.StartNewOrchestrationAction(name="o", scheduledTime=Timestamp(seconds=2**62)),
    )
    text = _refused(lambda: LIMITS.entity_batch_result(pb.EntityBatchResult(actions=[start])), TimestampOutOfRangeError)
    assert "actions[0].startNewOrchestration.scheduledTime is out of range" in text


def test_an_activity_failure_over_the_limit_is_refused() -> None:
    failure = pb.TaskFailureDetails(errorType="E", errorMessage="m" * 300_000)
    text = _refused(lambda: LIMITS.activity_response(pb.ActivityResponse(failureDetails=failure)))
    assert "failureDetails is 3000" in text and "the limit is 262144 bytes" in text


# Pages -----------------------------------------------------------------------------------------------
def _walk(rows: list[str], limit: int, max_bytes: int | None, read_size: int) -> list[list[str]]:
    """Every page of a walk over ``rows`` (sorted keys) with continuation tokens, as a client makes it."""

    def read(after: str | None, count: int) -> list[str]:
        return [r for r in rows if after is None or r > after][:count]

    def build(row: str) -> str:
        return row * 100  # a hundred times the key: pages end by bytes long before by count

    page = Page[str, str](read, build, lambda r: r, max_bytes)
    pages, token = [], None
    while True:
        items, token = page.fill(token, limit, read_size)
        pages.append(items)
        if token is None:
            return pages


@pytest.mark.parametrize("read_size", [1, 3, 11, 1000])
def test_a_byte_bounded_walk_returns_every_row_once(read_size: int) -> None:
    rows = [f"{i:04}" for i in range(50)]
    pages = _walk(rows, limit=20, max_bytes=2000, read_size=read_size)
    assert [item[:4] for page in pages for item in page] == rows
    assert all(sum(wire_size(i) for i in page) <= 2000 for page in pages)
    assert all(pages)  # no page comes back empty, the last one included


def test_a_count_bounded_walk_is_unchanged_without_a_byte_bound() -> None:
    rows = [f"{i:04}" for i in range(50)]
    pages = _walk(rows, limit=20, max_bytes=None, read_size=21)
    assert [len(p) for p in pages] == [20, 20, 10]


def test_an_item_larger_than_the_bound_still_makes_a_page_of_its_own() -> None:
    rows = ["a", "b"]
    pages = _walk(rows, limit=10, max_bytes=50, read_size=10)
    assert [[i[:1] for i in p] for p in pages] == [["a"], ["b"]]


def test_the_page_bound_is_below_a_clients_default_receive_limit() -> None:
    assert PAGE_BYTES < 4 * 1024 * 1024


def test_a_work_item_takes_queued_messages_up_to_its_budget() -> None:
    queued = [Message(i, b"x" * 400, 0) for i in range(10)]
    assert [m.id for m in taken_within(queued, 1000)] == [0, 1]
    assert [m.id for m in taken_within(queued, 10)] == [0]  # at least one, whatever its size
    assert len(taken_within(queued, 10_000)) == 10


def test_a_batch_of_instance_ids_is_capped() -> None:
    batch = pb.InstanceBatch(instanceIds=[f"i{n}" for n in range(1001)])
    text = _refused(lambda: LIMITS.message(pb.PurgeInstancesRequest(instanceBatch=batch)))
    assert text == "instanceBatch.instanceIds holds 1001 IDs; the limit is 1000"
    long_id = pb.InstanceBatch(instanceIds=["ok", "i" * 101])
    text = _refused(lambda: LIMITS.message(pb.SkipGracefulOrchestrationTerminationsRequest(instanceBatch=long_id)))
    assert text == "instanceBatch.instanceIds[1] is 101 characters; the limit is 100"


def test_a_rewound_history_meets_the_limits_of_the_history_it_replaces() -> None:
    started = pb.HistoryEvent(eventId=-1, executionStarted=pb.ExecutionStartedEvent(name="o"))
    raised = pb.HistoryEvent(eventId=-1, eventRaised=pb.EventRaisedEvent(name="e" * 1025))
    rewind = pb.OrchestratorAction(id=0, rewindOrchestration=pb.RewindOrchestrationAction(newHistory=[started, raised]))
    text = _refused(lambda: LIMITS.orchestrator_response(_turn(rewind)))
    assert "actions[0].rewindOrchestration.newHistory[1].eventRaised.name is 1025 characters" in text


def test_the_orchestration_trace_context_a_turn_stores_is_limited() -> None:
    """Stored with the instance, it goes out in every later work item: unbounded, it would make them unsendable."""
    response = _turn()
    response.orchestrationTraceContext.spanID.value = "s" * 5000
    text = _refused(lambda: LIMITS.orchestrator_response(response))
    assert text == "orchestrationTraceContext.spanID is 5000 characters; the limit is 1024"
    response.orchestrationTraceContext.spanID.value = "s" * 16
    response.orchestrationTraceContext.spanStartTime.seconds = 2**62
    assert "orchestrationTraceContext.spanStartTime is out of range" in _refused(
        lambda: LIMITS.orchestrator_response(response), TimestampOutOfRangeError
    )


def test_an_id_prefix_longer_than_any_id_is_refused() -> None:
    query = pb.InstanceQuery()
    query.instanceIdPrefix.value = "p" * 101
    text = _refused(lambda: LIMITS.message(pb.QueryInstancesRequest(query=query)))
    assert text == "query.instanceIdPrefix is 101 characters; the limit is 100"
    entities = pb.EntityQuery()
    entities.instanceIdStartsWith.value = "@e@" + "k" * 98
    assert "query.instanceIdStartsWith is 101 characters; the limit is 100" in _refused(
        lambda: LIMITS.message(pb.QueryEntitiesRequest(query=entities)), RefusedContentError
    )
