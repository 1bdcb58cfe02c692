"""How results and chunks are cut into stream items, kept under the per-turn limit, and put together again."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from durabletask.extensions.langgraph._delivery import PIECE, TURN_BUDGET, Assembly, Outbox, pieces
from durabletask.extensions.langgraph._serde import dump
from durabletask.streams import MAX_ITEM_BYTES, MAX_TURN_BYTES

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


class FakeContext:
    """An orchestration context that records what each turn publishes; a timer starts the next turn."""

    def __init__(self) -> None:
        self.current_utc_datetime = T0
        self.turns: list[list[Any]] = [[]]

    def publish(self, value: Any, topic: str) -> None:
        self.turns[-1].append(value)

    def create_timer(self, when: datetime) -> str:
        return "timer"


def drive(ctx: FakeContext, plan: Any) -> int:
    """Run ``plan``, each timer it yields ending the turn; returns how many timers it yielded."""
    timers = 0
    for _ in plan:
        timers += 1
        ctx.turns.append([])
    return timers


def turn_bytes(turn: list[Any]) -> int:
    return sum(len(json.dumps(json.dumps(value))) for value in turn)


def test_a_message_of_any_size_is_cut_into_items_below_the_item_limit() -> None:
    # Characters JSON escapes: the worst case for an item's size (the stream counts its encoded value).
    message = {"text": '\\"' * 200_000}
    cut = pieces("r", "result", 0, message)
    assert all(len(json.dumps(v)) < MAX_ITEM_BYTES for v in cut)
    assert [v["more"] for v in cut] == [True] * (len(cut) - 1) + [False]
    assembly = Assembly("r")
    for value in cut:
        assert assembly.feed(value, None, None) == []
    assert assembly.result == message


def test_the_orchestrator_spreads_a_large_message_over_turns_below_the_turn_limit() -> None:
    ctx = FakeContext()
    outbox = Outbox(ctx)
    timers = drive(ctx, outbox.send("r", "result", 0, {"text": "y" * (3 * MAX_TURN_BYTES)}))
    assert timers >= 3 and len(ctx.turns) == timers + 1
    assert all(0 < turn_bytes(t) <= TURN_BUDGET for t in ctx.turns)


def test_a_turn_is_counted_from_what_was_published_since_the_clock_moved() -> None:
    ctx = FakeContext()
    outbox = Outbox(ctx)
    half = {"text": "z" * (TURN_BUDGET // 2)}
    assert drive(ctx, outbox.send("r", "chunks", 1, half)) == 0
    # The same time: possibly the same turn, so the second half-budget message waits for a new one.
    assert drive(ctx, outbox.send("r", "chunks", 2, half)) >= 1
    ctx.current_utc_datetime = T0 + timedelta(seconds=1)  # a later turn: the budget is whole again
    ctx.turns.append([])
    assert drive(ctx, outbox.send("r", "chunks", 3, half)) == 0


def test_a_single_small_message_is_one_item() -> None:
    assert len(pieces("r", "chunks", 1, {"c": dump([((), "updates", {"a": 1})], "c")})) == 1
    assert len(pieces("r", "result", 0, {"t": "a" * (PIECE + 1)})) == 2
