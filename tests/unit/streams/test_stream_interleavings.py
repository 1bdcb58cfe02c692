"""Order and completeness of a stream under interleavings drawn at random, without I/O.

Three producers (the orchestrator, and two attempts of one activity) write batches to the head; their signals
land in any interleaving (one producer's in order), some twice, and sealed segments are stored late. Several
subscribers read meanwhile, some resuming after a cursor another one got; their reads are answered at once or
late (with the state as it was when they asked, as a slow or retried call would be), against a backend that
holds reads and one that does not. Every subscriber must see each producer's items in order, none lost, none
twice, and a resumed one exactly the items after its cursor.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from durabletask import history
from durabletask._instance_models import OrchestrationStatus
from durabletask._streams import entity, reader, wire
from tests.conftest import fuzz_examples

IID = "inst-interleaved"
EXECUTION = "e1"
TASK = 4
PAD = "x" * 3000  # about 21 items fill a 64 KiB segment, so segments seal and are read


@dataclass
class Producer:
    name: str
    batches: list[dict[str, Any]]
    sent: int = 0  # signals sent so far (the orchestrator: turns committed)
    applied: int = 0  # signals the head has taken, in order


def _entries(name: str, batch: int, count: int) -> list[list[Any]]:
    return [["t", json.dumps([name, batch, j, PAD]), "2026-01-01T00:00:00.000000"] for j in range(count)]


def _producers(sizes: dict[str, list[int]]) -> dict[str, Producer]:
    made = {
        "o": [wire.orchestrator_batch(EXECUTION, n + 1, _entries("o", n, c)) for n, c in enumerate(sizes["o"])],
        "A": [
            wire.activity_batch(EXECUTION, TASK, "runA", n + 1, _entries("A", n, c)) for n, c in enumerate(sizes["A"])
        ],
        "B": [
            wire.activity_batch(EXECUTION, TASK, "runB", n + 1, _entries("B", n, c)) for n, c in enumerate(sizes["B"])
        ],
    }
    return {name: Producer(name, batches) for name, batches in made.items()}


@dataclass
class World:
    producers: dict[str, Producer]
    held_reads: bool
    states: dict[str, Any] = field(default_factory=dict)
    unstored: list[tuple[int, list[Any]]] = field(default_factory=list)  # segment puts not yet applied
    ended: bool = False

    def apply(self, batch: dict[str, Any]) -> None:
        head_id = str(wire.head_entity(IID))
        state = self.states.get(head_id) or entity.new_head_state()
        if entity.append(state, json.loads(json.dumps(batch))):
            entity.seal(state, lambda number, items: self.unstored.append((number, items)))
        self.states[head_id] = state

    def store_segment(self, index: int) -> None:
        number, items = self.unstored.pop(index)
        self.states[str(wire.segment_entity(IID, number))] = {"items": items}

    def can_end(self) -> bool:
        # An activity attempt's items are stored before its result (the publisher waits for them), and the
        # orchestrator's last batch is committed with its last turn, though the head may take it later.
        o, a, b = self.producers["o"], self.producers["A"], self.producers["B"]
        return o.sent == len(o.batches) and a.applied == a.sent and b.applied == len(b.batches)

    def answer(self, step: reader.Step) -> Any:
        if isinstance(step, reader.ReadHead):
            head = copy.deepcopy(self.states.get(str(step.entity)))
            version = hashlib.sha256(json.dumps(head).encode()).hexdigest() if self.held_reads else None
            return reader.HeadRead(head, version)
        if isinstance(step, reader.ReadEntity):
            return copy.deepcopy(self.states.get(str(step.entity)))
        if isinstance(step, reader.ReadStatus):
            status = OrchestrationStatus.COMPLETED if self.ended else OrchestrationStatus.RUNNING
            return type("State", (), {"runtime_status": status})()
        assert isinstance(step, reader.ReadHistory)
        instance = history.OrchestrationInstance(IID, EXECUTION)
        started = history.ExecutionStartedEvent(event_id=-1, timestamp=None, name="o", orchestration_instance=instance)  # type: ignore[arg-type]
        signals = [
            history.EntityOperationSignaledEvent(
                event_id=n,
                timestamp=None,
                request_id=f"r{n}",
                operation=wire.APPEND,  # type: ignore[arg-type]
                input=json.dumps({"s": n + 1}),
                target_instance_id=str(wire.head_entity(IID)),
            )
            for n in range(self.producers["o"].sent)
        ]
        return [started, *signals]


class Subscriber:
    def __init__(self, after: str | None) -> None:
        self.after = after
        self.plan = reader.subscription(IID, topics=None, after=after, timeout=None, decode=json.loads)
        self.items: list[wire.StreamItem] = []
        self.late: Any = None  # a reply held back, answered at the next step
        self.has_late = False
        self.done = False

    def step(self, world: World, answer_late: bool) -> None:
        """Run to its next reads (three at most), answering each as of when it is asked; with ``answer_late`` the
        first answer is held back until the next step, as a slow or retried call's would be."""
        reply = self.late if self.has_late else None
        self.has_late = False
        reads = 0
        while not self.done:
            try:
                step = self.plan.send(reply)
            except StopIteration:
                self.done = True
                return
            reply = None
            if isinstance(step, reader.Deliver):
                self.items.append(step.item)
            elif not isinstance(step, reader.Sleep):
                reply = world.answer(step)
                reads += 1
                if answer_late or reads == 3:
                    self.late, self.has_late = reply, True
                    return


def _actions(world: World, subscribers: list[Subscriber]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for p in world.producers.values():
        if not world.ended and p.sent < len(p.batches) and (p.name != "B" or world.producers["A"].sent > 0):
            found.append(("send", p.name))
        if p.applied < p.sent:
            found.append(("apply", p.name))
        if p.applied:
            found.append(("again", p.name))  # a signal delivered twice
    found += [("store", i) for i in range(len(world.unstored))]
    found += [("read", i) for i, s in enumerate(subscribers) if not s.done]
    found += [("late", i) for i, s in enumerate(subscribers) if not s.done]
    if any(s.items for s in subscribers):
        found.append(("resume", None))
    if not world.ended and world.can_end():
        found.append(("end", None))
    return found


def _act(world: World, subscribers: list[Subscriber], action: tuple[str, Any], data: st.DataObject) -> None:
    kind, arg = action
    if kind == "send":
        world.producers[arg].sent += 1
    elif kind == "apply":
        p = world.producers[arg]
        world.apply(p.batches[p.applied])
        p.applied += 1
    elif kind == "again":
        p = world.producers[arg]
        world.apply(p.batches[p.applied - 1])
    elif kind == "store":
        world.store_segment(arg)
    elif kind in ("read", "late"):
        subscribers[arg].step(world, answer_late=kind == "late")
    elif kind == "resume":
        seen = [item for s in subscribers for item in s.items]
        subscribers.append(Subscriber(data.draw(st.sampled_from(seen)).id))
    else:
        world.ended = True


def _finish(world: World, subscribers: list[Subscriber]) -> None:
    for p in world.producers.values():
        p.sent = max(p.sent, 1) if p.name == "A" else len(p.batches)  # the crashed attempt sends no more
        while p.applied < p.sent:
            world.apply(p.batches[p.applied])
            p.applied += 1
    while world.unstored:
        world.store_segment(0)
    world.ended = True
    for s in subscribers:
        for _ in range(1000):
            if s.done:
                break
            s.step(world, answer_late=False)
        assert s.done, "the subscription did not end"


def _stored(world: World) -> list[list[Any]]:
    head = world.states[str(wire.head_entity(IID))]
    segments = [world.states[str(wire.segment_entity(IID, number))]["items"] for number, *_ in head["segs"]]
    return [item for items in segments for item in items] + head["items"]


@settings(max_examples=fuzz_examples(150), deadline=None)
@given(
    data=st.data(),
    held_reads=st.booleans(),
    sizes=st.fixed_dictionaries(
        {name: st.lists(st.integers(1, 6), min_size=1, max_size=4) for name in ("o", "A", "B")}
    ),
    readers=st.integers(1, 3),
)
def test_every_subscriber_gets_each_producers_items_in_order_once_and_a_resumed_one_exactly_the_rest(
    data: st.DataObject, held_reads: bool, sizes: dict[str, list[int]], readers: int
) -> None:
    world = World(_producers(sizes), held_reads)
    world.apply(world.producers["o"].batches[0])  # the instance exists with its first turn's items
    world.producers["o"].sent = world.producers["o"].applied = 1
    subscribers = [Subscriber(None) for _ in range(readers)]
    for _ in range(data.draw(st.integers(0, 120))):
        actions = _actions(world, subscribers)
        if not actions:
            break
        _act(world, subscribers, data.draw(st.sampled_from(actions)), data)
    _finish(world, subscribers)

    stored = _stored(world)
    assert [item[0] for item in stored] == list(range(len(stored)))  # numbered densely, none dropped
    for s in subscribers:
        start = -1 if s.after is None else wire.parse_cursor(IID, s.after)
        expected = [wire.make_cursor(IID, item[0]) for item in stored if item[0] > start]
        assert [i.id for i in s.items] == expected  # exactly the items after the cursor, in order, once
        by_producer: dict[str, list[tuple[int, int]]] = {}
        attempts: dict[str, set[int | None]] = {}
        for item in s.items:
            name, batch, j, _ = item.data
            by_producer.setdefault(name, []).append((batch, j))
            attempts.setdefault(name, set()).add(item.attempt)
        for order in by_producer.values():
            assert order == sorted(order)
        if s.after is None:
            applied = {p.name: p.applied for p in world.producers.values()}
            for name, count in applied.items():
                wanted = [(b, j) for b in range(count) for j in range(sizes[name][b])]
                assert by_producer.get(name, []) == wanted
        assert attempts.get("o", {None}) == {None}
        assert len(attempts.get("A", {1})) == 1 and len(attempts.get("B", {2})) == 1
        assert not (attempts.get("A", set()) & attempts.get("B", set()))
