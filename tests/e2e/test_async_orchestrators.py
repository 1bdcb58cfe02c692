"""``async def`` orchestrators end to end: registered and scheduled like generator ones, on the real worker.

Every kind of durable task awaited in one workflow; an instance started by a generator orchestrator and
finished by its ``async def`` rewrite; extended sessions, continue-as-new with a new version, worker
versioning, rewind, work item filters, and an orchestrator that awaits ``asyncio.sleep`` failing at once.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task
from durabletask.entities import DurableEntity, EntityInstanceId
from durabletask.worker import VersionFailureStrategy, VersioningOptions, VersionMatchStrategy

from .conftest import Hub, unique_id
from .test_sessions import counters, wait_for_custom_history

COMPLETED = client.OrchestrationStatus.COMPLETED
FAILED = client.OrchestrationStatus.FAILED
ATTEMPTS: Counter[str] = Counter()
BROKEN: set[str] = set()


@dataclass
class Order:
    id: str
    amount: int


def reserve(ctx: task.ActivityContext, order: Order) -> str:
    return f"reserved {order.id}"


async def charge(ctx: task.ActivityContext, order: Order) -> int:
    await asyncio.sleep(0)  # activities may do real async I/O; orchestrators may not
    return order.amount


def flaky(ctx: task.ActivityContext, key: str) -> str:
    ATTEMPTS[key] += 1
    if ATTEMPTS[key] == 1:
        raise ConnectionError("first attempt fails")
    return f"ok after {ATTEMPTS[key]}"


def step(ctx: task.ActivityContext, name: str) -> str:
    if name in BROKEN:
        raise RuntimeError(f"{name} is broken")
    return f"{name}-ok"


class Ledger(DurableEntity):
    def add(self, amount: int) -> int:
        total = self.get_state(int, 0) + amount
        self.set_state(total)
        return total


async def ship(ctx: task.OrchestrationContext, order: Order) -> str:
    await ctx.create_timer(timedelta(milliseconds=50))
    return f"shipped {order.id}"


async def order_flow(ctx: task.OrchestrationContext, order: Order) -> dict[str, Any]:
    stock = await ctx.call_activity(reserve, input=order)
    paid, shipped = await task.when_all(
        [ctx.call_activity(charge, input=order), ctx.call_sub_orchestrator(ship, input=order)]
    )
    cancel = ctx.wait_for_external_event("cancel")
    winner = await task.when_any([cancel, ctx.create_timer(timedelta(hours=1))])
    ledger = EntityInstanceId("ledger", order.id)
    async with ctx.lock_entities([ledger]):
        total = await ctx.call_entity(ledger, "add", paid)
    retry = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=100), max_number_of_attempts=3)
    notified = await ctx.call_activity(flaky, input=ctx.instance_id, retry_policy=retry)
    return {
        "stock": stock,
        "paid": paid,
        "shipped": shipped,
        "cancelled": winner is cancel,
        "total": total,
        "notified": notified,
    }


def test_every_durable_task_awaited_in_one_workflow(hub: Hub) -> None:
    w = hub.worker()
    w.add_orchestrator(order_flow)
    w.add_orchestrator(ship)
    for activity in (reserve, charge, flaky):
        w.add_activity(activity)
    w.add_entity(Ledger)
    w.start()
    c = hub.client()
    iid = c.schedule_new_orchestration(order_flow, input=Order(unique_id("o"), 42))
    c.wait_for_orchestration_start(iid, timeout=30)
    wait_for_custom_history(c, iid, "timerCreated")
    c.raise_orchestration_event(iid, "cancel", data="customer asked")
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    order_id = state.get_input()["id"]
    assert state.get_output() == {
        "stock": f"reserved {order_id}",
        "paid": 42,
        "shipped": f"shipped {order_id}",
        "cancelled": True,
        "total": 42,
        "notified": "ok after 2",
    }


def step_then_wait(ctx: task.OrchestrationContext, start: int) -> Any:
    first = yield ctx.call_activity(step, input=f"first-{start}")
    extra = yield ctx.wait_for_external_event("more")
    return [first, extra, (yield ctx.call_activity(step, input="second"))]


async def step_then_wait_async(ctx: task.OrchestrationContext, start: int) -> Any:
    first = await ctx.call_activity(step, input=f"first-{start}")
    extra = await ctx.wait_for_external_event("more")
    return [first, extra, await ctx.call_activity(step, input="second")]


def test_an_instance_started_by_a_generator_finishes_under_its_async_rewrite(hub: Hub) -> None:
    old = hub.worker()
    old.add_orchestrator(step_then_wait, name="flow")
    old.add_activity(step)
    old.start()
    c = hub.client()
    iid = c.schedule_new_orchestration("flow", input=1)
    wait_for_custom_history(c, iid, "taskCompleted")
    old.stop()
    new = hub.worker()
    new.add_orchestrator(step_then_wait_async, name="flow")
    new.add_activity(step)
    new.start()
    c.raise_orchestration_event(iid, "more", data=5)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.get_output() == ["first-1-ok", 5, "second-ok"]


async def counting(ctx: task.OrchestrationContext, steps: int) -> int:
    value = 0
    for i in range(steps):
        value += len(await ctx.call_activity(step, input=f"s{i}"))
    return value


@pytest.mark.emulator_internals("reads the emulator's session counters")
def test_an_extended_session_resumes_the_live_coroutine(hub: Hub) -> None:
    continued, _ = counters(hub)
    hub.start_worker([counting], [step])
    c = hub.client()
    iid = c.schedule_new_orchestration(counting, input=6)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.get_output() == sum(len(f"s{i}-ok") for i in range(6))
    assert hub.server is not None and hub.server.engine.continued_sessions - continued >= 6


async def upgrading(ctx: task.OrchestrationContext, rounds: list[str]) -> Any:
    rounds = [*rounds, f"{ctx.version}:{await ctx.call_activity(step, input='tick')}"]
    if len(rounds) < 3:
        ctx.continue_as_new(rounds, new_version=f"v{len(rounds) + 1}")
        return None
    return rounds


def test_continue_as_new_with_a_new_version(hub: Hub) -> None:
    hub.start_worker([upgrading], [step])
    c = hub.client()
    iid = c.schedule_new_orchestration(upgrading, input=[], version="v1")
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.get_output() == ["v1:tick-ok", "v2:tick-ok", "v3:tick-ok"]
    assert state.version == "v3"


async def versioned_child(ctx: task.OrchestrationContext, _: Any) -> str | None:
    return ctx.version


async def versioned_parent(ctx: task.OrchestrationContext, _: Any) -> list[str | None]:
    return [ctx.version, await ctx.call_sub_orchestrator(versioned_child)]


def test_worker_versioning_applies_to_async_orchestrators(hub: Hub) -> None:
    w = hub.worker()
    w.use_versioning(
        VersioningOptions(
            version="2.0",
            default_version="2.0",
            match_strategy=VersionMatchStrategy.CURRENT_OR_OLDER,
            failure_strategy=VersionFailureStrategy.FAIL,
        )
    )
    w.add_orchestrator(versioned_parent)
    w.add_orchestrator(versioned_child)
    w.start()
    c = hub.client()
    ok = c.schedule_new_orchestration(versioned_parent, version="1.5")
    too_new = c.schedule_new_orchestration(versioned_parent, version="3.0")
    state = c.wait_for_orchestration_completion(ok, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.get_output() == ["1.5", "2.0"]  # the child got the worker's default version
    state = c.wait_for_orchestration_completion(too_new, timeout=60)
    assert state is not None and state.runtime_status == FAILED
    assert state.failure_details is not None and state.failure_details.error_type == "VersionMismatch"


async def etl(ctx: task.OrchestrationContext, tag: str) -> list[str]:
    return [await ctx.call_activity(step, input=f"{part}-{tag}") for part in ("extract", "load")]


def test_rewind_reruns_the_failed_call_of_an_async_orchestrator(hub: Hub) -> None:
    hub.start_worker([etl], [step])
    c = hub.client()
    tag = unique_id("etl")
    BROKEN.add(f"load-{tag}")
    iid = c.schedule_new_orchestration(etl, input=tag)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == FAILED
    BROKEN.discard(f"load-{tag}")
    c.rewind_orchestration(iid, reason="fixed")
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.get_output() == [f"extract-{tag}-ok", f"load-{tag}-ok"]


def test_work_item_filters_generated_from_the_registry_include_async_orchestrators(hub: Hub) -> None:
    w = hub.worker()
    w.add_orchestrator(counting)
    w.add_activity(step)
    w.use_work_item_filters()
    w.start()
    c = hub.client()
    state = c.wait_for_orchestration_completion(c.schedule_new_orchestration(counting, input=2), timeout=60)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details


async def napping(ctx: task.OrchestrationContext, _: Any) -> Any:
    await ctx.call_activity(step, input="before")
    await asyncio.sleep(3600)
    return "never"


def test_awaiting_asyncio_sleep_fails_the_orchestration_at_once(hub: Hub) -> None:
    hub.start_worker([napping], [step])
    c = hub.client()
    iid = c.schedule_new_orchestration(napping)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == FAILED
    details = state.failure_details
    assert details is not None and details.error_type == "durabletask.task.NonDeterminismError"
    assert details.message.startswith("orchestrator 'napping' awaited asyncio.tasks.sleep()")
    assert "Move the I/O into an activity" in details.message
    kinds = [type(e).__name__ for e in c.get_orchestration_history(iid)]
    assert kinds.count("TaskScheduledEvent") == 1
    assert json.loads(state.serialized_input or "null") is None
