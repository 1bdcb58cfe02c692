"""The loop's own flag (``aio_loop.Flag``): what its waits promise; the idle waits of streams and waiters rely on it."""

from __future__ import annotations

import asyncio
import gc

import pytest

from dtscale_emulator.ops import aio_loop


def test_a_set_flag_wakes_every_waiter_and_a_set_one_answers_at_once() -> None:
    async def scenario() -> list[bool]:
        flag = aio_loop.Flag()
        waits = [asyncio.ensure_future(aio_loop.wait(flag, 10)) for _ in range(3)]
        await asyncio.sleep(0)
        flag.set()
        woken = list(await asyncio.gather(*waits))
        return [*woken, await aio_loop.wait(flag, 0)]

    assert asyncio.run(scenario()) == [True, True, True, True]


def test_a_wait_that_times_out_says_so_and_a_cleared_flag_waits_again() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        flag = aio_loop.Flag()
        timed_out = await aio_loop.wait(flag, 0.01)
        flag.set()
        flag.clear()
        again = await aio_loop.wait(flag, 0.01)
        return timed_out, again, flag.is_set()

    assert asyncio.run(scenario()) == (False, False, False)


def test_a_cancelled_wait_raises_and_leaves_no_waiter_behind() -> None:
    async def scenario() -> bool:
        flag = aio_loop.Flag()
        wait = asyncio.ensure_future(aio_loop.wait(flag, None))
        await asyncio.sleep(0)
        wait.cancel()
        with pytest.raises(asyncio.CancelledError):
            await wait
        later = asyncio.ensure_future(aio_loop.wait(flag, 10))
        await asyncio.sleep(0)
        flag.set()
        return await later

    assert asyncio.run(scenario()) is True


def test_a_cancellation_that_arrives_as_the_flag_is_set_is_not_swallowed() -> None:
    async def scenario() -> None:
        flag = aio_loop.Flag()
        wait = asyncio.ensure_future(aio_loop.wait(flag, 10))
        await asyncio.sleep(0)
        flag.set()  # the waiter's future is done, but the waiting task has not resumed yet
        wait.cancel()
        with pytest.raises(asyncio.CancelledError):
            await wait

    asyncio.run(scenario())


def _futures_held(flag: aio_loop.Flag) -> list[object]:
    return [held for ref in gc.get_referents(flag) if isinstance(ref, list) for held in ref]


def test_waits_that_time_out_or_are_cancelled_leave_nothing_held_by_a_flag_that_is_never_set() -> None:
    """A stream idle for hours times out once per health ping, and an instance waiter every few seconds: the
    flag must not keep a future for each of those waits until it is next set."""

    async def scenario() -> list[object]:
        flag = aio_loop.Flag()
        for _ in range(5):
            assert await aio_loop.wait(flag, 0.001) is False
        wait = asyncio.ensure_future(aio_loop.wait(flag, None))
        await asyncio.sleep(0)
        wait.cancel()
        with pytest.raises(asyncio.CancelledError):
            await wait
        return _futures_held(flag)

    assert asyncio.run(scenario()) == []
