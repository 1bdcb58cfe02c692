"""Awaited durable calls are typed: mypy sees an activity's (or sub-orchestrator's) return type at the await.

A bounded call (any timeout or a cancellation type) is typed as a ``CancellableTask``, a plain one is not.

A small orchestrator file is type-checked by mypy in strict mode; ``assert_type`` lines fail the check if a
type is lost, and a second file must produce exactly the errors a wrong use deserves.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

TYPED = """
from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, assert_type

from durabletask import task
from durabletask.entities import EntityInstanceId, EntityLock


@dataclass
class Order:
    id: str


@dataclass
class Receipt:
    total: float


def reserve(ctx: task.ActivityContext, order: Order) -> int:
    return 1


async def pay(ctx: task.ActivityContext, order: Order) -> Receipt:
    return Receipt(1.0)


async def ship(ctx: task.OrchestrationContext, order: Order) -> str:
    return "shipped"


def weigh(ctx: task.OrchestrationContext, order: Order) -> Generator[task.Task[None], None, float]:
    yield ctx.create_timer(timedelta(seconds=1))
    return 1.0


async def workflow(ctx: task.OrchestrationContext, order: Order) -> Receipt:
    assert_type(await ctx.call_activity(reserve, input=order), int)
    receipt = await ctx.call_activity(pay, input=order)
    assert_type(receipt, Receipt)
    assert_type(await ctx.call_sub_orchestrator(ship, input=order), str)
    assert_type(await ctx.call_sub_orchestrator(weigh, input=order), float)
    assert_type(await ctx.call_activity("reserve", input=order), Any)
    assert_type(await ctx.call_activity("reserve", return_type=Receipt), Receipt)
    assert_type(await task.when_all([ctx.call_activity(reserve, input=order) for _ in range(3)]), list[int])
    mixed = await task.when_all([ctx.call_activity(pay, input=order), ctx.call_sub_orchestrator(ship, input=order)])
    assert_type(mixed, list[object])
    timer = ctx.create_timer(timedelta(hours=1))
    winner = await task.when_any([ctx.wait_for_external_event("cancel", data_type=bool), timer])
    assert_type(winner, task.Task[bool | None])
    assert_type(await timer, None)
    assert_type(await ctx.wait_for_external_event("approve", data_type=bool), bool)
    assert_type(await ctx.call_entity(EntityInstanceId("counter", "c"), "get", return_type=int), int)
    assert_type(ctx.lock_entities([EntityInstanceId("counter", "c")]), task.LockTask[EntityLock])
    async with ctx.lock_entities([EntityInstanceId("counter", "c")]) as lock:
        assert_type(lock, EntityLock)
    return receipt


def classic(ctx: task.OrchestrationContext, order: Order) -> Generator[task.Task[Any], Any, int]:
    stock: int = yield ctx.call_activity(reserve, input=order)
    yield task.when_all([ctx.call_activity(reserve, input=order), ctx.call_activity(pay, input=order)])
    with (yield ctx.lock_entities([EntityInstanceId("counter", "c")])):
        pass
    return stock


def bounded(ctx: task.OrchestrationContext, order: Order) -> Generator[task.Task[Any], Any, int]:
    t = ctx.call_activity(reserve, input=order, heartbeat_timeout=timedelta(seconds=30))
    assert_type(t, task.CancellableTask[int])
    cancel = task.ActivityCancellation.ABANDON
    assert_type(ctx.call_activity(pay, input=order, cancellation=cancel), task.CancellableTask[Receipt])
    five = timedelta(minutes=5)
    assert_type(
        ctx.call_activity("reserve", start_to_close_timeout=five, return_type=Receipt), task.CancellableTask[Receipt]
    )
    assert_type(ctx.call_activity("reserve", schedule_to_close_timeout=five), task.CancellableTask[Any])
    assert_type(ctx.call_activity(reserve, input=order), task.CompletableTask[int])
    assert_type(ctx.call_activity(pay, input=order), task.CompletableTask[Receipt])
    assert_type(t.cancel(), bool)
    pages: int = yield t
    return pages
"""

MISTAKES = """
from __future__ import annotations

from durabletask import task


def reserve(ctx: task.ActivityContext, order: int) -> int:
    return order


async def wrong(ctx: task.OrchestrationContext, order: int) -> None:
    text: str = await ctx.call_activity(reserve, input=order)
    await ctx.call_activity(reserve, input="not an order")
    ctx.call_activity(reserve, input=order).cancel()
"""


def mypy(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / name
    path.write_text(source)
    # From the project root, so the project's strict settings apply to the snippet.
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--python-version", "3.11", "--no-incremental", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )


@pytest.mark.timeout(300)
def test_awaited_calls_have_the_activity_and_orchestrator_return_types(tmp_path: Path) -> None:
    done = mypy(tmp_path, "typed_workflow.py", TYPED)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(300)
def test_a_wrongly_typed_await_or_input_is_reported(tmp_path: Path) -> None:
    done = mypy(tmp_path, "mistakes.py", MISTAKES)
    flagged = sorted(int(line.split(":")[1]) for line in done.stdout.splitlines() if ": error: " in line)
    source = MISTAKES.splitlines()
    assert [source[n - 1].strip() for n in flagged] == [
        "text: str = await ctx.call_activity(reserve, input=order)",
        'await ctx.call_activity(reserve, input="not an order")',
        "ctx.call_activity(reserve, input=order).cancel()",
    ], done.stdout
