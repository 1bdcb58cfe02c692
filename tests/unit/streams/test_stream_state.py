"""The stream head's bookkeeping and the subscription plan, without I/O: a dict stands in for entity storage."""

from __future__ import annotations

import json
from typing import Any

import pytest

from durabletask import history
from durabletask._instance_models import OrchestrationStatus
from durabletask._streams import entity, reader, wire

IID = "inst-1"


class Store:
    """Entity states by ID, written the way the head entity writes them (signals applied at once)."""

    def __init__(self, cap: int = wire.DEFAULT_MAX_INSTANCE_BYTES) -> None:
        self.states: dict[str, Any] = {}
        self.cap = cap
        self.held: list[tuple[int, list[Any]]] = []  # segment puts not yet applied, when hold is set
        self.hold = False

    def append(self, batch: dict[str, Any]) -> None:
        head_id = str(wire.head_entity(IID))
        state = self.states.get(head_id) or entity.new_head_state()
        if entity.append(state, json.loads(json.dumps(batch))):
            entity.seal(state, self._put)
            entity.trim(state, self.cap, lambda n: self.states.pop(str(wire.segment_entity(IID, n)), None))
        self.states[head_id] = state

    def _put(self, number: int, items: list[Any]) -> None:
        if self.hold:
            self.held.append((number, items))
        else:
            self.states[str(wire.segment_entity(IID, number))] = {"items": items}

    def release(self) -> None:
        for number, items in self.held:
            self.states[str(wire.segment_entity(IID, number))] = {"items": items}
        self.held = []


def _entries(n: int, size: int = 10, start: int = 0) -> list[list[Any]]:
    return [["t", json.dumps("x" * size + str(start + i)), "2026-01-01T00:00:00.000000"] for i in range(n)]


def _make_state(status: OrchestrationStatus) -> Any:
    class S:
        runtime_status = status

    return S()


def drive(
    store: Store,
    *,
    after: str | None = None,
    topics: list[str] | None = None,
    status: OrchestrationStatus = OrchestrationStatus.COMPLETED,
    batches: int = 0,
    on_sleep: Any = None,
    limit: int = 100_000,
) -> list[wire.StreamItem]:
    plan = reader.subscription(
        IID, topics=topics, after=after, timeout=None, decode=lambda t: json.loads(t) if t else None
    )
    out: list[wire.StreamItem] = []
    reply: Any = None
    for _ in range(limit):
        try:
            step = plan.send(reply)
        except StopIteration:
            return out
        reply = None
        if isinstance(step, reader.Deliver):
            out.append(step.item)
        elif isinstance(step, reader.ReadStatus):
            reply = _make_state(status)
        elif isinstance(step, reader.ReadHead):
            reply = reader.HeadRead(store.states.get(str(step.entity)), None)  # a backend that holds no reads
        elif isinstance(step, reader.ReadEntity):
            reply = store.states.get(str(step.entity))
        elif isinstance(step, reader.ReadHistory):
            started = history.ExecutionStartedEvent(
                event_id=-1,
                timestamp=None,
                name="o",  # type: ignore[arg-type]
                orchestration_instance=history.OrchestrationInstance(IID, "e1"),
            )
            signals = [
                history.EntityOperationSignaledEvent(
                    event_id=0,
                    timestamp=None,
                    request_id="r",
                    operation="append",  # type: ignore[arg-type]
                    input=json.dumps({"s": n + 1}),
                    target_instance_id=str(wire.head_entity(IID)),
                )
                for n in range(batches)
            ]
            reply = [started, *signals]
        elif isinstance(step, reader.Sleep) and on_sleep is not None:
            on_sleep()
    raise AssertionError("the plan did not end")


def test_items_are_numbered_across_producers_and_attempts() -> None:
    store = Store()
    store.append(wire.orchestrator_batch("e1", 1, _entries(2)))
    store.append(wire.activity_batch("e1", 4, "runA", 1, _entries(1)))
    store.append(wire.activity_batch("e1", 4, "runB", 1, _entries(1)))
    store.append(wire.activity_batch("e1", 4, "runA", 2, _entries(1)))
    items = drive(store, batches=1)
    assert [i.id for i in items] == [wire.make_cursor(IID, n) for n in range(5)]
    assert [(i.task_id, i.attempt) for i in items] == [(None, None), (None, None), (4, 1), (4, 2), (4, 1)]


def test_a_batch_delivered_twice_is_stored_once() -> None:
    store = Store()
    batch = wire.activity_batch("e1", 1, "run", 1, _entries(3))
    store.append(batch)
    store.append(batch)
    assert len(drive(store)) == 3


def test_sealed_segments_are_read_in_order_and_resumed_inside() -> None:
    store = Store()
    for n in range(30):  # 30 batches of 40 x ~1 KiB: several segments
        store.append(wire.activity_batch("e1", 1, "run", n + 1, _entries(40, 1000, n * 40)))
    head = store.states[str(wire.head_entity(IID))]
    assert len(head["segs"]) >= 3
    items = drive(store)
    assert [i.data for i in items] == ["x" * 1000 + str(i) for i in range(1200)]
    resumed = drive(store, after=items[500].id)
    assert [i.id for i in resumed] == [i.id for i in items[501:]]


def test_a_segment_not_yet_stored_is_waited_for() -> None:
    store = Store()
    store.hold = True
    for n in range(10):
        store.append(wire.activity_batch("e1", 1, "run", n + 1, _entries(40, 1000, n * 40)))
    items = drive(store, on_sleep=store.release)
    assert len(items) == 400 and [i.id for i in items] == sorted(i.id for i in items)


def test_past_the_cap_the_oldest_items_are_dropped_with_one_marker() -> None:
    store = Store(cap=100_000)
    for n in range(10):
        store.append(wire.activity_batch("e1", 1, "run", n + 1, _entries(40, 1000, n * 40)))
    head = store.states[str(wire.head_entity(IID))]
    assert head["total"] <= 100_000 and head["first"] > 0
    items = drive(store)
    marker, rest = items[0], items[1:]
    assert marker.topic == wire.DROPPED_TOPIC and marker.data["dropped"] == head["first"]
    assert marker.id == wire.make_cursor(IID, head["first"] - 1)
    assert [i.id for i in rest] == [wire.make_cursor(IID, n) for n in range(head["first"], 400)]
    kept = {k for k in store.states if k.startswith(f"@{wire.SEGMENT_ENTITY}@")}
    assert kept == {str(wire.segment_entity(IID, seg[0])) for seg in head["segs"]}  # dropped segments deleted
    assert head["segs"][0][0] > 0


def test_topics_filter_and_the_end_waits_for_the_last_orchestrator_batch() -> None:
    store = Store()
    store.append(
        wire.orchestrator_batch("e1", 1, [["a", "1", "2026-01-01T00:00:00"], ["b", "2", "2026-01-01T00:00:00"]])
    )
    pending = [wire.orchestrator_batch("e1", 2, [["a", "3", "2026-01-01T00:00:00"]])]
    # History records two batches; the head has stored one: the plan waits, then delivers the last item.
    items = drive(store, topics=["a"], batches=2, on_sleep=lambda: pending and store.append(pending.pop()))
    assert [i.data for i in items] == [1, 3]


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("cursor", "message"),
    [
        ("5", "not a stream cursor"),
        ("00000000000x-12345678", "not a stream cursor"),
        (wire.make_cursor("other", 3), "belongs to another instance"),
        (7, "a cursor is a string"),
    ],
)
def test_bad_cursors_are_refused_when_subscribing(cursor: Any, message: str) -> None:
    with pytest.raises(wire.StreamCursorError, match=message):
        reader.subscription(IID, topics=None, after=cursor, timeout=None, decode=str)


@pytest.mark.adversarial
def test_bad_subscription_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="instance_id"):
        reader.subscription("", topics=None, after=None, timeout=None, decode=str)
    with pytest.raises(TypeError, match="topics"):
        reader.subscription(IID, topics="tokens", after=None, timeout=None, decode=str)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_instance_bytes"):
        entity.make_head_entity(10)


def test_against_a_backend_that_holds_reads_the_plan_waits_on_the_server_and_never_sleeps() -> None:
    store = Store()
    store.append(wire.orchestrator_batch("e1", 1, _entries(2)))
    plan = reader.subscription(IID, topics=None, after=None, timeout=None, decode=json.loads)
    reads: list[reader.ReadHead] = []
    statuses = iter([OrchestrationStatus.RUNNING, OrchestrationStatus.RUNNING, OrchestrationStatus.COMPLETED])
    delivered: list[Any] = []
    reply: Any = None
    with pytest.raises(StopIteration):
        for _ in range(100):
            step = plan.send(reply)
            reply = None
            assert not isinstance(step, reader.Sleep)
            if isinstance(step, reader.ReadStatus):
                reply = _make_state(next(statuses))
            elif isinstance(step, reader.ReadHead):
                reads.append(step)
                if len(reads) == 2:  # the held read ends with a change: two more items
                    store.append(wire.activity_batch("e1", 3, "runA", 1, _entries(2, start=2)))
                state = store.states.get(str(step.entity))
                reply = reader.HeadRead(state, f"v{state['next']}")
            elif isinstance(step, reader.ReadHistory):
                reply = []
            elif isinstance(step, reader.Deliver):
                delivered.append(step.item.data)
    assert delivered == ["x" * 10 + str(i) for i in range(4)]
    # First read: nothing named, nothing to wait for; then each read is held, naming the version the last one saw
    # and the instance's end; once the instance has ended, the last read is at once and no longer names it.
    assert (reads[0].seen, reads[0].wait) == (None, 0.0)
    assert (reads[1].seen, reads[1].wait, reads[1].until_end) == ("v2", reader.HOLD_SECONDS, True)
    assert [read.seen for read in reads[2:-1]] == ["v4"] * (len(reads) - 3)
    assert (reads[-1].wait, reads[-1].until_end) == (0.0, False)


def test_against_a_backend_that_ignores_the_hint_the_plan_polls_with_backoff() -> None:
    store = Store()
    pauses: list[float] = []
    plan = reader.subscription(IID, topics=None, after=None, timeout=None, decode=json.loads)
    reply: Any = None
    for _ in range(12):
        step = plan.send(reply)
        reply = None
        if isinstance(step, reader.ReadStatus):
            reply = _make_state(OrchestrationStatus.RUNNING)
        elif isinstance(step, reader.ReadHead):
            reply = reader.HeadRead(store.states.get(str(step.entity)), None)
        elif isinstance(step, reader.Sleep):
            pauses.append(step.seconds)
    assert pauses[:3] == [reader.FIRST_PAUSE, reader.FIRST_PAUSE * 2, reader.FIRST_PAUSE * 4]


def _held_drive(store: Store, on_read: Any, status: OrchestrationStatus, batches: int) -> list[Any]:
    """Drive a plan against a backend that holds reads; ``on_read(step, n)`` may change the store first."""
    plan = reader.subscription(IID, topics=None, after=None, timeout=None, decode=json.loads)
    steps: list[Any] = []
    reply: Any = None
    for _ in range(200):
        try:
            step = plan.send(reply)
        except StopIteration:
            return steps
        steps.append(step)
        reply = None
        if isinstance(step, reader.ReadStatus):
            reply = _make_state(status)
        elif isinstance(step, reader.ReadHead):
            on_read(step, sum(isinstance(s, reader.ReadHead) for s in steps))
            state = store.states.get(str(step.entity))
            reply = reader.HeadRead(state, f"v{json.dumps(state, sort_keys=True).__hash__()}")
        elif isinstance(step, reader.ReadEntity):
            reply = store.states.get(str(step.entity))
        elif isinstance(step, reader.ReadHistory):
            reply = [
                history.ExecutionStartedEvent(
                    event_id=-1,
                    timestamp=None,
                    name="o",  # type: ignore[arg-type]
                    orchestration_instance=history.OrchestrationInstance(IID, "e1"),
                ),
                *[
                    history.EntityOperationSignaledEvent(
                        event_id=n,
                        timestamp=None,
                        request_id="r",
                        operation="append",  # type: ignore[arg-type]
                        input=json.dumps({"s": n + 1}),
                        target_instance_id=str(wire.head_entity(IID)),
                    )
                    for n in range(batches)
                ],
            ]
    raise AssertionError("the plan did not end")


def test_once_the_last_batch_is_delivered_after_the_end_the_plan_ends_without_another_held_read() -> None:
    store = Store()
    store.append(wire.orchestrator_batch("e1", 1, _entries(2)))

    def on_read(step: reader.ReadHead, n: int) -> None:
        if step.wait and not step.until_end:  # held after the end: the last turn's batch lands meanwhile
            store.append(wire.orchestrator_batch("e1", 2, _entries(1, start=2)))

    steps = _held_drive(store, on_read, OrchestrationStatus.COMPLETED, batches=2)
    assert [s.item.data for s in steps if isinstance(s, reader.Deliver)] == ["x" * 10 + str(i) for i in range(3)]
    assert isinstance(steps[-1], reader.Deliver)  # it ended right after delivering the last item


def test_a_sealed_segment_not_stored_yet_is_polled_for_not_held_on() -> None:
    store = Store()
    store.hold = True
    store.append(wire.orchestrator_batch("e1", 1, _entries(30, size=3000)))  # sealed: its segment is held back

    def on_read(step: reader.ReadHead, n: int) -> None:
        assert not (step.wait and store.held)  # no held read while a segment is missing: it would not wake
        if n == 3:
            store.release()

    steps = _held_drive(store, on_read, OrchestrationStatus.COMPLETED, batches=1)
    assert len([s for s in steps if isinstance(s, reader.Deliver)]) == 30
    assert any(isinstance(s, reader.Sleep) for s in steps)
