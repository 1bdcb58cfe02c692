"""A graceful stop that begins while a stream is leasing: what the drain's count of leases out missed is not sent.

The drain (the first half of ``EmulatorServer.shutdown``) marks the dispatcher draining and counts the leases out,
then waits for those to end. A stream on the event loop may be between taking work from the store and recording
its lease when that happens: the count misses the lease. Were the item sent, its worker's result would arrive
after the server stopped, be cut off, and the activity would run again after the restart. The interleaving is
injected at the one point it can happen: the batch leased for a stream, about to be recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import grpc
import pytest

from dtscale_emulator.engine.work import BATCH, ActivityWork
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import NameFilter

from .conftest import HubStub, WorkStream, complete, schedule, start

pytestmark = pytest.mark.adversarial

T = TypeVar("T")
PINGS_AFTER = 3  # health pings read after the drain began: an item sent then would have come before them


class DrainWhileLeasing:
    """Every point passes through unchanged, except that once armed, the first activity batch leased starts the
    drain before its leases are recorded (as the stopping thread can, between the stream's two steps)."""

    def __init__(self) -> None:
        self.server: EmulatorServer | None = None
        self.armed = False
        self.began = threading.Event()
        self.counted: int | None = None

    async def pause(self, point: str, key: str) -> None:
        return None

    def choose(self, point: str, key: str, options: Sequence[str]) -> str:
        return options[0]  # send it, apply it

    def shuffle(self, point: str, items: list[T]) -> list[T]:
        leased: list[Any] = list(items)
        activities = point == BATCH and any(isinstance(work, ActivityWork) for _, work in leased)
        if self.armed and activities and not self.began.is_set():
            assert self.server is not None
            self.counted = self.server.dispatcher.drain_leases(0)  # marks the drain and counts; waits for nothing
            self.began.set()
        return items

    def committed(self, kind: str, token: str) -> None:
        return None


@pytest.fixture
def rig() -> Iterator[tuple[EmulatorServer, DrainWhileLeasing]]:
    hook = DrainWhileLeasing()
    server = EmulatorServer(port=0, in_memory=True, lease_timeout=300, health_ping_interval=0.05, interleaver=hook)
    hook.server = server
    server.start()
    try:
        yield server, hook
    finally:
        server.close()


def test_an_activity_leased_as_the_drain_begins_goes_back_instead_of_out(
    rig: tuple[EmulatorServer, DrainWhileLeasing],
) -> None:
    server, hook = rig
    with grpc.insecure_channel(server.address) as channel:
        stub = HubStub(channel, "default")
        stream = WorkStream(stub, skip_pings=False)
        iid = start(stub)
        turn = stream.next(timeout=10)
        while turn.HasField("healthPing"):
            turn = stream.next(timeout=10)
        assert turn.orchestratorRequest.instanceId == iid
        hook.armed = True
        complete(stub, turn, schedule(1, "charge", '"card"'))

        pings = 0
        while pings < PINGS_AFTER:
            item = stream.next(timeout=10)
            assert not item.HasField("activityRequest"), "an activity leased after the drain began went out"
            pings += item.HasField("healthPing") and hook.began.is_set()
        stream.cancel()

    assert hook.counted == 0  # the drain's count missed the lease, as the stopping thread's can
    # Handed back, not lost: nothing is leased, and the activity is there for the next stream to take.
    assert server.dispatcher.leases.live_tokens() == []
    tokens = server.dispatcher.leases.tokens(1)
    found, _ = server.engine.lease_activities(
        "default", NameFilter(), tokens, server.clock.now() + timedelta(seconds=300)
    )
    assert [work.request.name for work in found] == ["charge"]
    assert found[0].request.orchestrationInstance.instanceId == iid
