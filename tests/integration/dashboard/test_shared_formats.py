"""The stored formats the dashboard reads without the SDK, pinned: written by the SDK, read back by the dashboard.

The dashboard (emulator distribution) imports nothing of the SDK, so it reads stream entities and the marks of
bounded activities itself. Here the SDK writes them (its own stream head bookkeeping, its own tags and control
events) and the dashboard's readers must agree with the SDK's readers item for item: a change of format on
either side breaks these tests.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from dtscale_emulator.dashboard import activities, streams
from dtscale_emulator.dashboard.models import history_entry
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.protocol import StringValue, Timestamp, pb
from durabletask._instance_models import OrchestrationStatus
from durabletask._replay import activity_control as control
from durabletask._streams import entity, reader, wire

IID = "order-42"
T0 = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)


class Store:
    """Entity states as the SDK's stream entities write them, serialized as the backend stores them."""

    def __init__(self, cap: int = wire.DEFAULT_MAX_INSTANCE_BYTES) -> None:
        self.states: dict[str, Any] = {}
        self.cap = cap

    def append(self, batch: dict[str, Any]) -> None:
        head = str(wire.head_entity(IID))
        state = self.states.get(head) or entity.new_head_state()
        if entity.append(state, batch):
            entity.seal(state, self.put)
            entity.trim(state, self.cap, lambda n: self.states.pop(str(wire.segment_entity(IID, n)), None))
        self.states[head] = json.loads(json.dumps(state))

    def put(self, number: int, items: list[Any]) -> None:
        self.states[str(wire.segment_entity(IID, number))] = {"items": items}

    async def read(self, entity_id: str) -> str | None:
        found = self.states.get(entity_id)
        return None if found is None else json.dumps(found)


def entries(n: int, size: int, topic: str = "tokens") -> list[list[Any]]:
    return [
        wire.item_entry(topic, json.dumps({"n": i, "pad": "x" * size}), T0 + timedelta(seconds=i)) for i in range(n)
    ]


def filled(cap: int = wire.DEFAULT_MAX_INSTANCE_BYTES, *, size: int = 40, batches: int = 3) -> Store:
    """An orchestrator batch, then two attempts of one activity (the second a retry), then more of the first."""
    store = Store(cap)
    store.append(wire.orchestrator_batch("exec", 1, entries(3, size, "status")))
    for number in range(1, batches + 1):
        store.append(wire.activity_batch("exec", 5, "run-a", number, entries(40, size)))
    store.append(wire.activity_batch("exec", 5, "run-b", 1, entries(10, size)))
    return store


def sdk_items(store: Store, after: str | None = None) -> list[wire.StreamItem]:
    """What a subscriber of the SDK receives, up to the first pause (everything stored)."""
    plan = reader.subscription(IID, topics=None, after=after, timeout=None, decode=lambda text: text)
    running = type("State", (), {"runtime_status": OrchestrationStatus.RUNNING})()
    found: list[wire.StreamItem] = []
    reply: Any = None
    while True:
        step = plan.send(reply)
        reply = None
        if isinstance(step, reader.Deliver):
            found.append(step.item)
        elif isinstance(step, reader.ReadStatus):
            reply = running
        elif isinstance(step, reader.ReadHead):
            reply = reader.HeadRead(store.states.get(str(step.entity)), None)  # a backend that holds no reads
        elif isinstance(step, reader.ReadEntity):
            reply = store.states.get(str(step.entity))
        elif isinstance(step, reader.Sleep):
            return found


def dashboard_items(store: Store, limit: int, after: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """Every item the dashboard's pages give from ``after`` on, and how many pages it took."""
    found: list[dict[str, Any]] = []
    pages = 0
    query = {"limit": str(limit), **({"after": after} if after else {})}
    while True:
        page = aio_loop.run(streams.read_page(streams.PageRequest.parse(IID, query), store.read))
        pages += 1
        assert len(page["items"]) <= limit
        found.extend(page["items"])
        if not page["more"]:
            return found, pages
        query["after"] = page["next"]


def same(sdk: list[wire.StreamItem], board: list[dict[str, Any]]) -> None:
    assert [i["id"] for i in board] == [i.id for i in sdk]
    assert [(i["topic"], i["task_id"], i["attempt"]) for i in board] == [(i.topic, i.task_id, i.attempt) for i in sdk]
    for mine, theirs in zip(board, sdk, strict=True):
        if theirs.topic == wire.DROPPED_TOPIC:
            assert json.loads(mine["data"])["dropped"] == theirs.data["dropped"]
        else:
            assert (mine["data"], datetime.fromisoformat(mine["time"])) == (theirs.data, theirs.time)


def test_the_names_and_the_cursor_are_the_sdks() -> None:
    assert (streams.HEAD_ENTITY, streams.SEGMENT_ENTITY, streams.DROPPED_TOPIC) == (
        wire.HEAD_ENTITY,
        wire.SEGMENT_ENTITY,
        wire.DROPPED_TOPIC,
    )
    for instance_id in (IID, "x" * 64, "y" * 65, "ü" * 300):
        assert streams.head_id(instance_id) == str(wire.head_entity(instance_id))
        assert streams.segment_id(instance_id, 7) == str(wire.segment_entity(instance_id, 7))
    for instance_id, offset in ((IID, 0), ("ünïcode id", 41), ("x" * 300, 10**11)):
        cursor = wire.make_cursor(instance_id, offset)
        assert streams.make_cursor(instance_id, offset) == cursor
        assert streams.parse_cursor(instance_id, cursor) == wire.parse_cursor(instance_id, cursor) == offset
    assert (activities.CONTROL_TAG, activities.CONTROL_EVENT, activities.CONTROL_ENTITY) == (
        control.CONTROL_TAG,
        control.CONTROL_EVENT,
        control.CONTROL_ENTITY,
    )


def test_pages_of_the_head_and_its_sealed_segments_give_what_a_subscriber_gets() -> None:
    store = filled(size=1700)  # each activity batch seals a segment
    assert len(store.states) > 2, "the stream should have sealed segments"
    sdk = sdk_items(store)
    assert len(sdk) == 133 and {i.attempt for i in sdk if i.task_id == 5} == {1, 2}
    for limit in (1, 7, 500):
        board, pages = dashboard_items(store, limit)
        same(sdk, board)
        assert pages >= -(-len(sdk) // limit)
    middle = sdk[60].id
    same(sdk_items(store, after=middle), dashboard_items(store, 25, after=middle)[0])


def test_items_dropped_over_the_cap_show_the_sdks_marker() -> None:
    store = filled(wire.MAX_ITEM_BYTES, size=500, batches=4)
    head = store.states[str(wire.head_entity(IID))]
    assert head["first"] > 0, "the cap should have dropped the oldest items"
    sdk = sdk_items(store)
    assert sdk[0].topic == wire.DROPPED_TOPIC
    board, _ = dashboard_items(store, 50)
    same(sdk, board)
    tail = aio_loop.run(streams.read_page(streams.PageRequest.parse(IID, {"tail": "5"}), store.read))
    assert [i["id"] for i in tail["items"]] == [i.id for i in sdk[-5:]]
    assert tail["dropped"] == head["first"] and tail["skipped"] == len(sdk) - 1 - 5


def test_a_page_is_bounded_in_bytes_and_cuts_long_data() -> None:
    store = Store()
    big = "y" * (streams.MAX_DATA_CHARS * 3)
    for number in range(1, 60):
        store.append(wire.activity_batch("exec", 1, "run", number, [wire.item_entry("t", json.dumps(big), T0)] * 4))
    page = aio_loop.run(streams.read_page(streams.PageRequest.parse(IID, {"limit": "500"}), store.read))
    assert page["more"] and len(page["items"]) < 500
    assert sum(len(i["data"]) for i in page["items"]) <= streams.MAX_PAGE_BYTES + streams.MAX_DATA_CHARS
    first = page["items"][0]
    assert first["truncated"] and len(first["data"]) == streams.MAX_DATA_CHARS
    assert first["data_length"] == len(json.dumps(big))


def stamp(value: datetime) -> Any:
    found = Timestamp()
    found.FromDatetime(value)
    return found


def event(event_id: int, seconds: int, **kind: Any) -> pb.HistoryEvent:
    return pb.HistoryEvent(eventId=event_id, timestamp=stamp(T0 + timedelta(seconds=seconds)), **kind)


def raised(seconds: int, body: str) -> pb.HistoryEvent:
    return event(
        -1, seconds, eventRaised=pb.EventRaisedEvent(name=control.CONTROL_EVENT, input=StringValue(value=body))
    )


def scheduled(task_id: int, name: str, attempt: int, options: control.ActivityOptions | None) -> pb.HistoryEvent:
    tags = {}
    if options is not None:
        settings = control.AttemptSettings(attempt, "key", 8.0, 1.0, True, None, options.timeouts())
        tags[control.CONTROL_TAG] = settings.to_tag()
    return event(task_id, task_id, taskScheduled=pb.TaskScheduledEvent(name=name, tags=tags))


@pytest.mark.parametrize("continued", [False, True])
def test_running_activities_read_from_the_sdks_tags_and_control_events(continued: bool) -> None:
    options = control.ActivityOptions.build(
        timedelta(minutes=5), timedelta(hours=1), None, timedelta(seconds=30), control.ActivityCancellation.TRY_CANCEL
    )
    history = [
        event(-1, 0, executionStarted=pb.ExecutionStartedEvent(name="flow")),
        scheduled(0, "plain", 1, None),  # an ordinary call: not shown
        scheduled(1, "extract", 2, options),
        scheduled(2, "finished", 1, options),
        scheduled(3, "cancelled", 1, options),
        raised(5, control.control_event(1, "start")),
        raised(6, control.control_event(1, "beat", json.dumps({"page": 3}))),
        raised(7, control.control_event(1, "beat", json.dumps({"page": 9}))),
        event(8, 8, taskCompleted=pb.TaskCompletedEvent(taskScheduledId=2)),
        event(
            9,
            9,
            entityOperationSignaled=pb.EntityOperationSignaledEvent(
                operation="cancel",
                input=StringValue(value="3"),
                targetInstanceId=StringValue(value=f"@{control.CONTROL_ENTITY}@key"),
            ),
        ),
    ]
    if continued:
        history.append(event(-1, 20, executionStarted=pb.ExecutionStartedEvent(name="flow")))
    found = activities.running_activities([history_entry(e) for e in history])
    if continued:
        assert found == []
        return
    (one,) = found
    assert (one.task_id, one.name, one.attempt) == (1, "extract", 2)
    assert one.timeouts == {"start_to_close": 300.0, "schedule_to_close": 3600.0, "heartbeat": 30.0}
    assert (one.started_at, one.last_heartbeat_at) == (T0 + timedelta(seconds=5), T0 + timedelta(seconds=7))
    assert one.last_heartbeat_details is not None and json.loads(one.last_heartbeat_details) == {"page": 9}


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("head", "message"),
    [
        ("blob:v1:payloads:stream-head", "the stream head's state is not JSON (is it kept in a payload store?)"),
        ("[1, 2]", "the stream head's state is not a JSON object"),
        ('{"next": 1}', "the stream head's state lacks next, first, segs or items"),
        ('{"next": 1, "first": 0, "segs": [[0]], "items": []}', "lacks next, first, segs or items"),
        ('{"next": 1, "first": 0, "segs": [], "items": [["x"]]}', "a stored stream item is not [offset, topic"),
        ('{"next": 1, "first": 0, "segs": [], "items": [[0, "t", "1", "noon", null, null]]}', "is not an ISO 8601"),
    ],
)
def test_a_stream_state_of_another_format_is_reported_not_guessed(head: str, message: str) -> None:
    async def read(entity_id: str) -> str | None:
        return head if entity_id == streams.head_id(IID) else None

    with pytest.raises(streams.StreamFormatError) as refused:
        aio_loop.run(streams.read_page(streams.PageRequest.parse(IID, {}), read))
    assert message in str(refused.value)
