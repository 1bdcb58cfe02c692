"""Per-kind concurrency slots, the work-item pools' thread pool and event loop, and completion delivery."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import grpc
import pytest
from worker_fakes import WAIT

from durabletask._worker.completions import CompletionSender
from durabletask._worker.dispatch import Slots, WorkItemPools, WorkKind
from durabletask._worker.failures import is_lease_lost
from durabletask._worker.stream import ChannelProvider, backoff_delay
from tests.conftest import watch_log

LOG = logging.getLogger("durabletask-worker-tests")


def test_slots_block_at_the_limit_until_released() -> None:
    full = threading.Event()
    slots = Slots(1, on_full=full.set)
    never = threading.Event()
    assert slots.acquire(never)
    assert not full.is_set()  # a free slot is taken without waiting
    acquired = threading.Event()

    def second() -> None:
        if slots.acquire(never):
            acquired.set()

    waiter = threading.Thread(target=second)
    waiter.start()
    assert full.wait(WAIT)  # the second acquire found no free slot, and waits
    assert not acquired.is_set()
    slots.release()
    assert acquired.wait(WAIT)
    waiter.join(WAIT)
    assert slots.used == 1


def test_slots_waiters_give_up_when_woken_for_shutdown() -> None:
    full = threading.Event()
    slots = Slots(1, on_full=full.set)
    stop = threading.Event()
    assert slots.acquire(stop)
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(slots.acquire(stop)))
    waiter.start()
    assert full.wait(WAIT)  # it waits for a slot, not yet for the shutdown
    stop.set()
    slots.wake()
    waiter.join(WAIT)
    assert outcome == [False]
    assert slots.used == 1


def test_slots_refuse_over_release_and_bad_limits() -> None:
    with pytest.raises(RuntimeError):
        Slots(2).release()
    with pytest.raises(ValueError):
        Slots(0)


@pytest.fixture
def pools() -> Any:
    d = WorkItemPools({WorkKind.ACTIVITY: 2, WorkKind.ORCHESTRATION: 1, WorkKind.ENTITY: 1}, max_threads=8, logger=LOG)
    d.start()
    yield d
    d.close(wait=True)


def test_limit_is_per_kind(pools: WorkItemPools) -> None:
    gate = threading.Event()
    for _ in range(2):
        assert pools.acquire(WorkKind.ACTIVITY)
        pools.submit(WorkKind.ACTIVITY, lambda: gate.wait(WAIT) and None)
    assert pools.slots(WorkKind.ACTIVITY).used == 2
    # Activities being full does not hold back orchestrations.
    done = threading.Event()
    assert pools.acquire(WorkKind.ORCHESTRATION)
    pools.submit(WorkKind.ORCHESTRATION, done.set)
    assert done.wait(WAIT)
    gate.set()
    assert pools.wait_idle(WAIT)
    assert pools.slots(WorkKind.ACTIVITY).used == 0


def test_an_acquire_that_must_wait_says_so_at_debug_level(pools: WorkItemPools) -> None:
    gate = threading.Event()
    with watch_log(LOG, "all 2 activity slots are in use", logging.DEBUG) as full:
        for _ in range(2):
            assert pools.acquire(WorkKind.ACTIVITY)
            pools.submit(WorkKind.ACTIVITY, lambda: gate.wait(WAIT) and None)
        assert full.count == 0

        def take_and_give_back() -> None:
            if pools.acquire(WorkKind.ACTIVITY):
                pools.slots(WorkKind.ACTIVITY).release()

        third = threading.Thread(target=take_and_give_back)
        third.start()
        full.wait_for(1)
        gate.set()
        third.join(WAIT)
    assert full.count == 1 and not third.is_alive()
    assert pools.wait_idle(WAIT)


def test_a_failing_job_releases_its_slot(pools: WorkItemPools) -> None:
    def boom() -> None:
        raise RuntimeError("job failed")

    assert pools.acquire(WorkKind.ORCHESTRATION)
    pools.submit(WorkKind.ORCHESTRATION, boom)
    assert pools.wait_idle(WAIT)
    assert pools.slots(WorkKind.ORCHESTRATION).used == 0


@pytest.mark.adversarial
@pytest.mark.parametrize("escaping", [SystemExit, KeyboardInterrupt, GeneratorExit])
def test_a_job_raising_outside_exception_neither_stops_the_loop_nor_keeps_its_slot(
    pools: WorkItemPools, escaping: type[BaseException]
) -> None:
    async def async_escape() -> None:
        raise escaping()

    def escape() -> None:
        raise escaping()

    for _ in range(3):  # more than the two activity slots: each must come back
        assert pools.acquire(WorkKind.ACTIVITY)
        pools.submit_async(WorkKind.ACTIVITY, async_escape)
        assert pools.acquire(WorkKind.ACTIVITY)
        pools.submit(WorkKind.ACTIVITY, escape)
    assert pools.wait_idle(WAIT)
    ran = threading.Event()

    async def after() -> None:
        ran.set()

    # Before, SystemExit or KeyboardInterrupt out of a task stopped the event loop: later async work never ran.
    assert pools.acquire(WorkKind.ACTIVITY)
    pools.submit_async(WorkKind.ACTIVITY, after)
    assert ran.wait(WAIT) and pools.wait_idle(WAIT)
    assert pools.slots(WorkKind.ACTIVITY).used == 0


def test_async_jobs_share_one_loop_and_run_together(pools: WorkItemPools) -> None:
    both_running = threading.Barrier(3, timeout=WAIT)
    loops: set[int] = set()

    async def job() -> None:
        loops.add(id(asyncio.get_running_loop()))
        # The barrier is only passed if both coroutines are in flight at once; waiting on the pool
        # keeps the loop free for the other coroutine.
        await pools.run_blocking(both_running.wait)

    for _ in range(2):
        assert pools.acquire(WorkKind.ACTIVITY)
        pools.submit_async(WorkKind.ACTIVITY, job)
    both_running.wait()
    assert pools.wait_idle(WAIT)
    assert len(loops) == 1
    assert pools.slots(WorkKind.ACTIVITY).used == 0


def test_wait_idle_times_out_while_work_runs(pools: WorkItemPools) -> None:
    gate = threading.Event()
    assert pools.acquire(WorkKind.ENTITY)
    pools.submit(WorkKind.ENTITY, lambda: gate.wait(WAIT) and None)
    assert not pools.wait_idle(0.05)
    assert pools.in_flight == 1
    gate.set()
    assert pools.wait_idle(WAIT)


def test_acquire_fails_once_stopping(pools: WorkItemPools) -> None:
    pools.stop_accepting()
    assert not pools.acquire(WorkKind.ACTIVITY)


# --- completion delivery ------------------------------------------------------------------------
class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@pytest.mark.parametrize(
    ("code", "details", "lost"),
    [
        (grpc.StatusCode.NOT_FOUND, "no such work item", True),
        (grpc.StatusCode.FAILED_PRECONDITION, "lease expired", True),
        # Only the status decides: a message that mentions the token is no evidence the lease is gone.
        (grpc.StatusCode.INVALID_ARGUMENT, "unknown completion token 'x'", False),
        (grpc.StatusCode.INTERNAL, "failed to read the completion token", False),
        (grpc.StatusCode.UNKNOWN, "token", False),
        (grpc.StatusCode.UNAUTHENTICATED, "access token expired", False),
        (grpc.StatusCode.UNAVAILABLE, "connection reset", False),
    ],
)
def test_lease_lost_classification(code: grpc.StatusCode, details: str, lost: bool) -> None:
    assert is_lease_lost(FakeRpcError(code, details)) is lost


def _failing(errors: list[Exception]) -> tuple[list[int], Any]:
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        if errors:
            raise errors.pop(0)

    return calls, call


def _sender(**options: Any) -> CompletionSender:
    """A sender that retries without waiting."""
    return CompletionSender(LOG, retry_base=0, retry_cap=0, **options)


def test_sender_drops_a_lost_lease_without_retrying() -> None:
    calls, call = _failing([FakeRpcError(grpc.StatusCode.NOT_FOUND, "gone")])
    assert not _sender().send("x", call)
    assert len(calls) == 1


def test_sender_retries_transient_errors() -> None:
    calls, call = _failing([FakeRpcError(grpc.StatusCode.UNAVAILABLE, "blip")] * 2)
    assert _sender().send("x", call)
    assert len(calls) == 3


def test_sender_gives_up_on_other_errors() -> None:
    calls, call = _failing([FakeRpcError(grpc.StatusCode.INTERNAL, "bug"), ValueError("closed channel")])
    sender = _sender()
    assert not sender.send("x", call)
    assert not sender.send("y", call)
    assert len(calls) == 2


def test_backoff_is_jittered_and_capped() -> None:
    delays = [backoff_delay(attempt, 0.5, 4.0) for attempt in range(12) for _ in range(20)]
    assert all(0 <= d <= 4.0 for d in delays)
    assert all(0 <= backoff_delay(0, 0.5, 4.0) <= 0.5 for _ in range(50))
    assert len({round(d, 6) for d in delays}) > 100  # jittered, not a fixed schedule
    assert backoff_delay(10_000, 0.5, 4.0) <= 4.0


class FakeChannel:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _opener() -> tuple[list[FakeChannel], Any]:
    opened: list[FakeChannel] = []

    def open_channel() -> Any:
        opened.append(FakeChannel())
        return opened[-1]

    return opened, open_channel


def test_a_rebuilt_channel_stays_open_until_its_last_holder_releases_it() -> None:
    opened, open_channel = _opener()
    channels = ChannelProvider(None, open_channel)
    first, release_stream = channels.hold()
    _, release_item = channels.hold(first)  # a work item received on the stream's channel
    assert channels.get() is first
    for _ in range(3):  # however many rebuilds happen while the item runs
        assert channels.rebuild()
        channels.get()
    assert not first.closed and channels.retired == 1
    release_stream()
    release_stream()  # releasing twice counts once
    assert not first.closed
    release_item()
    assert first.closed and channels.retired == 0
    channels.close()
    assert all(c.closed for c in opened)


def test_many_rebuilds_leave_no_channel_open_but_the_current_one() -> None:
    opened, open_channel = _opener()
    channels = ChannelProvider(None, open_channel)
    for _ in range(50):
        _, release = channels.hold()
        release()
        assert channels.rebuild()
    current = channels.get()
    assert [c for c in opened if not c.closed] == [current] and channels.retired == 0
    channels.close()
    assert current.closed


def test_a_given_channel_is_never_rebuilt_or_closed() -> None:
    given = FakeChannel()
    channels = ChannelProvider(given, lambda: pytest.fail("must not open a channel"))  # type: ignore[arg-type]
    assert channels.get() is given
    assert not channels.rebuild()
    channels.close()
    assert not given.closed
