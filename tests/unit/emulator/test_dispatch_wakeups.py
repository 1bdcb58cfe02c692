"""Which GetWorkItems streams a change wakes, and that no stream misses a wake-up it needs.

The dispatcher runs here without gRPC: each stream is ``WorkDispatcher.serve`` on the emulator's loop, sending
into a queue. Health pings are an hour apart, so only a wake-up can bring a work item to a stream in time.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from datetime import datetime

import pytest

from dtscale_emulator.dispatch.dispatcher import WorkDispatcher
from dtscale_emulator.dispatch.streams import StreamState, Work, stream_filters
from dtscale_emulator.dispatch.wakeups import StreamWakeups
from dtscale_emulator.engine.changes import KINDS, ChangeFeed
from dtscale_emulator.engine.delivery import StartOptions
from dtscale_emulator.engine.entities import Entities
from dtscale_emulator.engine.instances import Engine
from dtscale_emulator.ops import aio_loop
from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import SqliteBackend
from tests.support.reliability import wait_until

HUB = "h"


class Stream:
    """One ``serve`` call on the emulator's loop; items it sends land in a queue."""

    def __init__(self, dispatcher: WorkDispatcher, request: pb.GetWorkItemsRequest, hub: str = HUB) -> None:
        self.items: queue.Queue[pb.WorkItem] = queue.Queue()
        self._open = threading.Event()
        self._open.set()

        async def send(item: pb.WorkItem) -> None:
            self.items.put(item)

        coro = dispatcher.serve(hub, request, self._open.is_set, send)
        self._future: Future[None] = asyncio.run_coroutine_threadsafe(coro, aio_loop.shared_loop())

    def next(self, timeout: float = 10.0) -> pb.WorkItem:
        return self.items.get(timeout=timeout)

    def close(self) -> None:
        self._open.clear()
        self._future.cancel()


class Rig:
    def __init__(self) -> None:
        self.backend = SqliteBackend(None)
        self.clock = ManualClock()
        feed = ChangeFeed()
        self.engine = Engine(self.backend, self.clock, feed)
        self.dispatcher = WorkDispatcher(
            self.engine, Entities(self.backend, self.clock, feed), lease_timeout=300.0, health_ping_interval=3600.0
        )
        feed.subscribe(self.dispatcher)
        self.streams: list[Stream] = []

    def stream(self, names: Sequence[str] | None = None, limit: int = 0, hub: str = HUB) -> Stream:
        filters = None
        if names is not None:
            filters = pb.WorkItemFilters(orchestrations=[pb.OrchestrationFilter(name=n) for n in names])
        request = pb.GetWorkItemsRequest(maxConcurrentOrchestrationWorkItems=limit, workItemFilters=filters)
        stream = Stream(self.dispatcher, request, hub)
        self.streams.append(stream)
        return stream

    def caught_up(self) -> None:
        """Waits until every stream waits for a change, with no wake-up pending."""
        count = len(self.streams)
        wait_until(
            lambda: len(self.dispatcher.streams) == count and self.dispatcher.streams_caught_up(),
            20,
            f"{count} streams to wait for a change",
        )

    def start(self, instance_id: str, name: str) -> None:
        self.engine.create(HUB, StartOptions(instance_id, name))

    def close(self) -> None:
        for stream in self.streams:
            stream.close()
        wait_until(lambda: not self.dispatcher.streams, 20, "the streams to end")
        self.dispatcher.close()
        self.backend.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = Rig()
    try:
        yield made
    finally:
        made.close()


@pytest.mark.adversarial  # many idle streams: finding 6 of issue #37
def test_a_start_wakes_only_the_stream_whose_filters_take_it(rig: Rig) -> None:
    for _ in range(40):
        rig.stream(names=["Other"])
    for _ in range(5):
        rig.stream(hub="another-hub")  # takes every name, but in another task hub
    mine = rig.stream(names=["Mine", "Third"])
    rig.caught_up()
    before = rig.dispatcher.wakeups.count

    rig.start("i1", "Mine")

    assert mine.next().orchestratorRequest.instanceId == "i1"
    rig.caught_up()
    assert rig.dispatcher.wakeups.count - before == 1
    assert all(s.items.empty() for s in rig.streams if s is not mine)


@pytest.mark.adversarial  # many idle streams: finding 6 of issue #37
def test_a_raised_event_and_an_entity_signal_wake_no_stream_filtered_to_other_names(rig: Rig) -> None:
    for _ in range(40):
        rig.stream(names=["Other"])  # orchestrations named Other, and nothing else
    rig.caught_up()
    rig.start("waiting", "Mine")  # no stream takes Mine: it stays queued
    rig.caught_up()
    before = rig.dispatcher.wakeups.count

    rig.engine.raise_event(HUB, "waiting", "approval", '"yes"')
    rig.dispatcher.entities.signal(HUB, "@counter@k", "add", "1", "r1", None)

    rig.caught_up()
    assert rig.dispatcher.wakeups.count - before == 0
    mine = rig.stream(names=["Mine"])
    assert mine.next().orchestratorRequest.instanceId == "waiting"  # the event and its instance are still there


@pytest.mark.adversarial  # a termination woke every stream of the task hub: issue #43, item 9
@pytest.mark.parametrize("recursive", [False, True])
def test_a_termination_wakes_no_stream_filtered_to_other_names(rig: Rig, recursive: bool) -> None:
    mine = rig.stream(names=["Mine"])
    rig.caught_up()
    rig.start("running", "Mine")
    first = mine.next()  # its first turn, which schedules nothing: the instance runs and waits
    response = pb.OrchestratorResponse(instanceId="running", completionToken=first.completionToken)
    rig.dispatcher.complete_orchestration(HUB, response)
    for _ in range(40):
        rig.stream(names=["Other"])
    rig.caught_up()
    before = rig.dispatcher.wakeups.count

    rig.engine.terminate(HUB, "running", "stop", recursive)

    terminated = mine.next().orchestratorRequest
    assert terminated.instanceId == "running"
    assert any(e.HasField("executionTerminated") for e in terminated.newEvents)
    rig.caught_up()
    assert rig.dispatcher.wakeups.count - before == 1
    assert all(s.items.empty() for s in rig.streams if s is not mine)


def test_work_of_no_known_name_wakes_every_stream_of_its_hub_and_kind(rig: Rig) -> None:
    specialists = [rig.stream(names=["Other"]) for _ in range(3)]
    everyone = rig.stream()
    elsewhere = rig.stream(hub="another-hub")
    rig.caught_up()
    before = rig.dispatcher.wakeups.count

    rig.dispatcher.work_changed(HUB, ("orchestration",))  # the change could not name its work

    rig.caught_up()
    assert rig.dispatcher.wakeups.count - before == len(specialists) + 1
    assert everyone.items.empty() and elsewhere.items.empty()  # nothing was there to take


def test_a_full_stream_sleeps_through_new_work_until_its_slot_is_freed(rig: Rig) -> None:
    full = rig.stream(limit=1)
    rig.start("first", "O")
    first = full.next()
    rig.caught_up()
    before = rig.dispatcher.wakeups.count

    rig.start("second", "O")
    rig.caught_up()
    assert rig.dispatcher.wakeups.count == before  # no room: waking it would only send it looking in vain
    assert full.items.empty()

    rig.dispatcher.abandon(HUB, first.completionToken, "orchestration")
    # The freed slot wakes it, and it takes the work that arrived while it was full (or the first back).
    assert full.next().orchestratorRequest.instanceId in {"first", "second"}
    assert rig.dispatcher.wakeups.count > before


def test_work_stored_while_a_stream_fetches_reaches_it(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    fetch = rig.dispatcher._fetch
    missed: list[int] = []

    def fetch_then_start(kind: str, state: StreamState, tokens: Sequence[str]) -> tuple[list[Work], bool]:
        found = fetch(kind, state, tokens)
        if kind == "orchestration" and not missed:
            # The fetch has read the queue (empty) when the start commits and announces itself.
            missed.append(len(found[0]))
            rig.start("raced", "O")
        return found

    monkeypatch.setattr(rig.dispatcher, "_fetch", fetch_then_start)
    stream = rig.stream()
    assert stream.next().orchestratorRequest.instanceId == "raced"
    assert missed == [0]


def test_work_stored_between_a_look_and_the_wait_reaches_the_stream(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []

    def next_due_then_start(hub: str) -> datetime | None:
        # The stream found nothing and asks for the next due time just before it waits: the start lands now.
        if not started:
            started.append("raced")
            rig.start("raced", "O")
        return None

    monkeypatch.setattr(rig.engine, "next_due", next_due_then_start)
    stream = rig.stream()
    assert stream.next().orchestratorRequest.instanceId == "raced"
    assert started == ["raced"]


def test_a_change_from_another_thread_while_streams_look_is_never_lost(rig: Rig) -> None:
    # Many small races at once: starts from a second thread while two streams keep taking work.
    streams = [rig.stream(names=["A"]), rig.stream(names=["A", "B"])]
    rig.caught_up()
    ids = [f"i{n}" for n in range(60)]

    def starter() -> None:
        for n, instance_id in enumerate(ids):
            rig.start(instance_id, "A" if n % 2 else "B")

    thread = threading.Thread(target=starter)
    thread.start()
    got: set[str] = set()
    while len(got) < len(ids):
        for stream in streams:
            while not stream.items.empty():
                item = stream.next()
                got.add(item.orchestratorRequest.instanceId)
        if len(got) < len(ids):
            wait_until(lambda: any(not s.items.empty() for s in streams), 20, "the next work item")
    thread.join()
    assert got == set(ids)


def test_a_stream_that_hands_work_back_does_not_starve_a_newer_one(rig: Rig) -> None:
    # A worker that rejects what it gets (a version it does not run) abandons it at once, again and again. The
    # stream opened later must still get its turn: streams woken together look in the order they went idle.
    rejecting = rig.stream()
    rig.start("contested", "O")
    held = rejecting.next()
    taking = rig.stream()
    rig.caught_up()
    stop = threading.Event()

    def reject() -> None:
        token = held.completionToken
        while not stop.is_set():
            rig.dispatcher.abandon(HUB, token, "orchestration")
            try:
                token = rejecting.next(timeout=1.0).completionToken
            except queue.Empty:
                return  # the work went to the other stream

    thread = threading.Thread(target=reject, daemon=True)
    thread.start()
    try:
        assert taking.next(timeout=20).orchestratorRequest.instanceId == "contested"
    finally:
        stop.set()
        thread.join(timeout=30)


@pytest.mark.adversarial  # many idle streams that all take every name: finding 6 of issue #37
def test_a_start_wakes_one_of_many_idle_streams_that_take_every_name(rig: Rig) -> None:
    streams = [rig.stream() for _ in range(30)]
    rig.caught_up()
    before = rig.dispatcher.wakeups.count

    rig.start("one", "Any")

    wait_until(lambda: any(not s.items.empty() for s in streams), 20, "a stream to take the work")
    rig.caught_up()
    assert rig.dispatcher.wakeups.count - before == 1
    assert sum(s.items.qsize() for s in streams) == 1


def test_work_one_change_made_beyond_the_woken_streams_room_goes_to_other_idle_streams(rig: Rig) -> None:
    streams = [rig.stream(limit=2) for _ in range(3)]
    rig.caught_up()
    quiet = Engine(rig.backend, rig.clock)  # stores without telling the dispatcher
    for n in range(6):
        quiet.create(HUB, StartOptions(f"batch-{n}", "O"))

    rig.dispatcher.work_changed(HUB, ("orchestration",), {"orchestration": frozenset({"O"})})  # one change, 6 items

    got = [stream.next().orchestratorRequest.instanceId for stream in streams for _ in range(2)]
    assert sorted(got) == [f"batch-{n}" for n in range(6)]


def _idle_state(hub: str = HUB) -> StreamState:
    state = StreamState(hub, stream_filters(pb.GetWorkItemsRequest()), dict.fromkeys(KINDS, 1))
    state.waiting = True
    return state


def test_a_baton_is_handed_on_when_its_stream_ends_or_has_no_room_before_it_looks() -> None:
    wakeups = StreamWakeups()
    first, second, third = _idle_state(), _idle_state(), _idle_state()
    for n, state in enumerate((first, second, third)):
        state.idle_since = float(n)
        wakeups.add(state)
    names = {"orchestration": frozenset({"O"})}

    wakeups.changed(HUB, ("orchestration",), names)
    assert [s.wake_pending for s in (first, second, third)] == [True, False, False]  # the longest idle
    assert first.batons == {"orchestration": frozenset({"O"})}

    wakeups.remove(first)  # it ends before it looks
    assert second.wake_pending and second.batons == {"orchestration": frozenset({"O"})}

    second.in_flight["orchestration"] = 1  # full by the time it looks
    wakeups.hand_on_unused(second, "orchestration")
    assert third.wake_pending and third.batons == {"orchestration": frozenset({"O"})}
    assert not second.batons and wakeups.count == 3
