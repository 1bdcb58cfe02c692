"""The seeded interleaver: its decisions follow from the seed and the work, not from what else ran first."""

from __future__ import annotations

import asyncio

from dtscale_emulator.engine.work import COMPLETE, COMPLETE_CHOICES, SEND, SEND_CHOICES
from dtscale_emulator.ops.faults import InterleavingRates, SeededInterleaver

BUSY = InterleavingRates(pause=0.5, max_delay=0.0, expire=0.3, drop=0.1, repeat=0.3, tick=0.5)


def _decisions(interleaver: SeededInterleaver, keys: list[str]) -> dict[str, list[str]]:
    made: dict[str, list[str]] = {key: [] for key in keys}
    for key in keys:
        for _ in range(20):
            made[key].append(interleaver.choose(SEND, key, SEND_CHOICES))
            made[key].append(interleaver.choose(COMPLETE, key, COMPLETE_CHOICES))
    return made


def test_the_same_seed_makes_the_same_choices_whatever_the_order_work_arrives_in() -> None:
    first = _decisions(SeededInterleaver(7, BUSY), ["a", "b", "c"])
    second = _decisions(SeededInterleaver(7, BUSY), ["c", "a", "b"])
    assert first == second
    assert {choice for made in first.values() for choice in made} == {"send", "expire", "drop", "apply", "repeat"}
    assert _decisions(SeededInterleaver(8, BUSY), ["a", "b", "c"]) != first


def test_a_reseed_starts_over() -> None:
    interleaver = SeededInterleaver(3, BUSY)
    before = _decisions(interleaver, ["a"])
    assert interleaver.steps == 40 and interleaver.choices
    interleaver.reseed(3)
    assert interleaver.steps == 0 and not interleaver.choices
    assert _decisions(interleaver, ["a"]) == before


def test_zero_rates_leave_everything_as_it_comes() -> None:
    ticks: list[int] = []
    calm = InterleavingRates(pause=0, expire=0, drop=0, repeat=0, tick=0, shuffle=0)
    interleaver = SeededInterleaver(1, calm, advance=lambda: ticks.append(1))
    assert set(_decisions(interleaver, ["a", "b"])["a"]) == {"send", "apply"}
    items = list(range(10))
    assert interleaver.shuffle("batch", items) == items
    asyncio.run(interleaver.pause(SEND, "a"))
    assert not ticks and interleaver.stats == {}


def test_pauses_move_the_clock_on_at_the_tick_rate() -> None:
    ticks: list[int] = []
    interleaver = SeededInterleaver(5, InterleavingRates(pause=0, tick=1.0), advance=lambda: ticks.append(1))

    async def meet() -> None:
        for n in range(5):
            await interleaver.pause(COMPLETE, f"i{n}")

    asyncio.run(meet())
    assert len(ticks) == 5 and interleaver.stats == {"tick": 5}


def test_a_token_accepted_twice_is_recorded() -> None:
    interleaver = SeededInterleaver(1)
    interleaver.committed("activity", "t1")
    interleaver.committed("activity", "t2")
    assert interleaver.double_completions == []
    interleaver.committed("activity", "t1")
    assert interleaver.double_completions == [("activity", "t1")]
