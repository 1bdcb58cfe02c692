"""Under each injected fault the worker reconnects, every run completes, and nothing is lost or applied twice."""

from __future__ import annotations

import threading

import pytest

from dtscale_emulator.ops.faults import FaultProfile
from durabletask import client
from tests.support.reliability import wait_until

from .conftest import STEPS, Rig, wait_all


@pytest.mark.adversarial
def test_cut_streams_reconnect_and_lose_nothing(rig: Rig) -> None:
    rig.slow.set()
    rig.start_worker()
    faults = rig.server.faults
    assert faults.wait_for_streams(1)
    ids = rig.schedule(12)
    # Cut the stream twice while work is in flight (at a third and at two thirds of the effects), whatever the
    # machine's speed, then let the periodic schedule keep cutting until everything has finished.
    total = 12 * STEPS
    for fraction in (1 / 3, 2 / 3):
        wait_until(lambda f=fraction: len(rig.ledger.effects()) >= total * f, 60, "effects to be applied")
        assert faults.wait_for_streams(1)
        assert faults.cut_streams() >= 1
    faults.apply(FaultProfile(cut_stream_every=0.25))
    wait_all(rig.client(), ids, 60)
    faults.clear()
    assert faults.stats.cuts >= 2
    assert faults.stats.streams >= 3  # the worker opened a new stream after each cut
    rig.verify(ids, "faults-cut-streams")


def test_stalled_stream_is_abandoned_by_the_worker(rig: Rig) -> None:
    rig.start_worker()
    faults = rig.server.faults
    assert faults.wait_for_streams(1)
    assert faults.stall_streams(30.0) == 1
    # No health pings arrive, so the worker's silence watchdog must drop the stream and open another.
    assert faults.wait_for_streams(1) and _wait_for_new_stream(rig, previous=1)
    ids = rig.run(6, timeout=30)
    assert faults.stats.stalls == 1
    rig.verify(ids, "faults-stalled-stream")


def _wait_for_new_stream(rig: Rig, previous: int) -> bool:
    wait_until(lambda: rig.server.faults.stats.streams > previous, 15, "the worker to open a second stream")
    return True


@pytest.mark.adversarial
def test_goaway_restarts_keep_every_run(rig: Rig) -> None:
    rig.slow.set()
    rig.start_worker()
    port = rig.server.port
    ids = rig.schedule(12)
    for restarts, seen in enumerate((1, 12)):
        # Restart while some effects are done and others are still in flight, once the worker is connected
        # again: on a loaded machine the effects of work already running can pass 12 during the first restart.
        wait_until(lambda n=seen: len(rig.ledger.effects()) >= n, 30, f"{seen} effects")  # type: ignore[misc]
        wait_until(lambda n=restarts: rig.server.faults.stats.streams > n, 30, "the worker to reconnect")  # type: ignore[misc]
        rig.server.faults.goaway(grace=0.3)
    wait_all(rig.client(), ids, 60)
    assert rig.server.faults.stats.goaways == 2
    # The worker reconnects after each restart (even if every run had finished before the second one).
    wait_until(lambda: rig.server.faults.stats.streams >= 3, 30, "the worker to reconnect after both restarts")
    assert rig.server.port == port  # restarted on the same port
    rig.verify(ids, "faults-goaway")


def test_goaway_profile_fires_periodically(rig: Rig) -> None:
    rig.start_worker()
    rig.server.faults.apply(FaultProfile(goaway_every=0.3, goaway_grace=0.1))
    wait_until(lambda: rig.server.faults.stats.goaways >= 2, 20, "two scheduled restarts")
    rig.server.faults.clear()
    # The last scheduled restart may have refused a connection moments ago.
    ids = rig.run(3, via=rig.reachable_client())
    rig.verify(ids, "faults-goaway-profile")


def test_delayed_completions_still_complete_once(rig: Rig) -> None:
    rig.start_worker()
    rig.server.faults.delay_completions(0.15)
    ids = rig.run(5)
    assert rig.server.faults.stats.delayed >= 5 * (2 * 3 + 1)  # every episode and activity result was held
    rig.verify(ids, "faults-delayed-completions")


def test_rejected_completion_tokens_are_redelivered(rig: Rig) -> None:
    rig.start_worker()
    rig.server.faults.reject_every(3)
    ids = rig.run(8)
    rig.server.faults.clear()
    stats = rig.server.faults.stats
    assert stats.rejected >= 5
    rig.verify(ids, "faults-rejected-tokens")
    # Rejected activity results were run again, yet the effect keys kept every effect to one application.
    attempts = rig.ledger.attempts()
    assert sum(attempts.values()) > len(attempts)


def test_reject_next_completion_refuses_exactly_that_many(rig: Rig) -> None:
    rig.start_worker()
    rig.server.faults.reject_next_completions(2)
    ids = rig.run(2)
    assert rig.server.faults.stats.rejected == 2
    rig.verify(ids, "faults-reject-next")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cut_stream_every=5s", FaultProfile(cut_stream_every=5.0)),
        ("stall-every=1m, stall_for=250ms", FaultProfile(stall_every=60.0, stall_for=0.25)),
        ("goaway_every=2,reject_completion_every=7", FaultProfile(goaway_every=2.0, reject_completion_every=7)),
        ("delay_completions=0.05", FaultProfile(delay_completions=0.05)),
        ("", FaultProfile()),
    ],
)
def test_profile_parsing(text: str, expected: FaultProfile) -> None:
    assert FaultProfile.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("explode=1", "unknown fault setting 'explode=1'"),
        ("cut_stream_every", "unknown fault setting 'cut_stream_every'"),
        ("cut_stream_every=soon", "cut_stream_every needs a number, got 'soon'"),
        ("stall_for=-1", "stall_for must not be negative"),
    ],
)
def test_profile_errors_name_the_setting(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultProfile.parse(text)


def test_a_client_wait_outlasts_a_restart(rig: Rig) -> None:
    rig.slow.set()
    rig.start_worker()
    c = rig.client()
    [instance_id] = rig.schedule(1)
    results: list[object] = []

    def wait() -> None:
        results.append(c.wait_for_orchestration_completion(instance_id, timeout=60))

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    wait_until(lambda: bool(rig.server.dispatcher.waiters), 10, "the client's wait to reach the server")
    assert waiter.is_alive()  # three 50 ms steps: the run is still going
    # The open wait is cut by the restart (UNAVAILABLE); the client asks again and still gets the result.
    rig.server.faults.goaway(grace=0.2)
    waiter.join(60)
    [state] = results
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED  # type: ignore[attr-defined]
