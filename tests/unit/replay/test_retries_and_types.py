"""Retry policies on the orchestration clock, and typed payload reconstruction."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

import pydantic
import pytest

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb

from .history import T0, History, failed_with, failure, output, run


def policy(**overrides: Any) -> task.RetryPolicy:
    options: dict[str, Any] = {"first_retry_interval": timedelta(seconds=10), "max_number_of_attempts": 3}
    options.update(overrides)
    return task.RetryPolicy(**options)


def retrying(retry: task.RetryPolicy, sub: bool = False) -> Any:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        if sub:
            return (yield ctx.call_sub_orchestrator("child", input=5, instance_id="kid", retry_policy=retry))
        return (yield ctx.call_activity("flaky", input=5, retry_policy=retry))

    orch.__name__ = "orch"
    return orch


def timer_at(actions: list[pb.OrchestratorAction]) -> datetime:
    (timer,) = [a for a in actions if a.HasField("createTimer")]
    return timer.createTimer.fireAt.ToDatetime()


def test_a_failed_attempt_waits_on_a_durable_timer_then_reschedules_under_the_same_id() -> None:
    # Every attempt reuses the first attempt's ID, as the official SDK numbers them; the timers take new IDs.
    orch = retrying(policy())
    history = History().started("orch").task_scheduled(1, "flaky").new().orchestrator_started().task_failed(1)
    first = run(history, orch)
    assert [a.id for a in first.actions] == [2]
    assert timer_at(first.actions) == history.now + timedelta(seconds=10)

    fire = history.now + timedelta(seconds=10)
    history.timer_created(2, fire).orchestrator_started(fire).timer_fired(2, fire)
    second = run(history, orch)
    assert [(a.id, a.scheduleTask.name, a.scheduleTask.input.value) for a in second.actions] == [(1, "flaky", "5")]

    history.task_scheduled(1, "flaky").orchestrator_started().task_failed(1)
    third = run(history, orch)
    assert [a.id for a in third.actions] == [3]
    fire = history.now + timedelta(seconds=10)
    history.timer_created(3, fire).orchestrator_started(fire).timer_fired(3, fire)
    history.task_scheduled(1, "flaky").orchestrator_started().task_completed(1, "finally")
    assert output(run(history, orch)) == "finally"


def fail_n_times(
    history: History, orch: Any, n: int, numbered: bool = False
) -> tuple[list[timedelta], pb.TaskFailureDetails | None]:
    """Fail up to ``n`` attempts one by one; return the retry delays seen and the final failure, if any.

    ``numbered``: attempt k fails with the message ``attempt k`` (else all with ``boom``)."""
    delays: list[timedelta] = []
    history.task_scheduled(1, "flaky")
    next_id = 2
    for attempt in range(1, n + 1):
        history.orchestrator_started().task_failed(1, failure(f"attempt {attempt}") if numbered else None)
        result = run(history, orch)
        last = result.actions[-1]
        if last.HasField("completeOrchestration"):
            return delays, last.completeOrchestration.failureDetails
        fire = timer_at(result.actions)
        delays.append(fire - history.now)
        history.timer_created(next_id, fire).orchestrator_started(fire).timer_fired(next_id, fire)
        history.task_scheduled(1, "flaky")
        next_id += 1
    return delays, None


def test_backoff_grows_and_is_capped_by_the_max_interval() -> None:
    orch = retrying(policy(max_number_of_attempts=5, backoff_coefficient=2.0,
                           max_retry_interval=timedelta(seconds=30)))
    delays, final = fail_n_times(History().started("orch"), orch, 4)
    assert final is None
    assert delays == [timedelta(seconds=s) for s in (10, 20, 30, 30)]


def test_attempts_are_bounded_and_the_last_failure_is_raised() -> None:
    delays, final = fail_n_times(History().started("orch"), retrying(policy(max_number_of_attempts=2)), 3)
    assert len(delays) == 1
    assert final is not None and "boom" in final.errorMessage


def test_retry_timeout_is_measured_on_the_orchestration_clock() -> None:
    orch = retrying(policy(max_number_of_attempts=10, retry_timeout=timedelta(seconds=15)))
    # The first failure (+1 s) retries at +11 s, inside the 15 s window; the second (+12 s) would retry at +22 s.
    delays, final = fail_n_times(History().started("orch"), orch, 5)
    assert delays == [timedelta(seconds=10)]
    assert final is not None


def test_no_retry_whose_timer_fires_after_the_retry_timeout() -> None:
    # 1 s, doubling, at most 10 s, 5 attempts, 14 s: failures at +1, +3, +6 and +11 s (each episode here
    # starts 1 s after the last); the fourth would retry at +19 s, past T0 + 14 s, so there are 4 attempts.
    orch = retrying(policy(first_retry_interval=timedelta(seconds=1), backoff_coefficient=2.0, max_number_of_attempts=5,
                           max_retry_interval=timedelta(seconds=10), retry_timeout=timedelta(seconds=14)))
    delays, final = fail_n_times(History().started("orch"), orch, 5, numbered=True)
    assert delays == [timedelta(seconds=s) for s in (1, 2, 4)]
    # Microsoft's SDK notices the timeout while replaying from the start, so it reports the first failure.
    assert final is not None and final.errorMessage.endswith("failed: attempt 1")


def test_retries_ended_by_the_attempt_count_report_the_last_failure() -> None:
    orch = retrying(policy(max_number_of_attempts=3, retry_timeout=timedelta(hours=1)))
    delays, final = fail_n_times(History().started("orch"), orch, 5, numbered=True)
    assert len(delays) == 2
    assert final is not None and final.errorMessage.endswith("failed: attempt 3")


def test_the_retry_timeout_counts_from_the_orchestration_time_of_the_call() -> None:
    retry = policy(first_retry_interval=timedelta(seconds=5), max_number_of_attempts=5,
                   retry_timeout=timedelta(seconds=12))

    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.create_timer(timedelta(seconds=100))
        return (yield ctx.call_activity("flaky", retry_policy=retry))

    wake = T0 + timedelta(seconds=100)
    history = History().started("orch").timer_created(1, wake).orchestrator_started(wake).timer_fired(1, wake)
    history.task_scheduled(2, "flaky").orchestrator_started(wake + timedelta(seconds=1)).task_failed(2)
    # The window runs from +100 s (the call), not from the instance's start: the retry at +106 s is made.
    assert timer_at(run(history, orch).actions) == wake + timedelta(seconds=6)
    fire = wake + timedelta(seconds=6)
    history.timer_created(3, fire).orchestrator_started(fire).timer_fired(3, fire).task_scheduled(2, "flaky")
    # Failing at +107 s, the next retry would fire at +112 s, the window's end: it is not made.
    history.orchestrator_started(wake + timedelta(seconds=7)).task_failed(2)
    assert failed_with(run(history, orch)) is not None


def test_predicate_and_non_retriable_failures_stop_retries() -> None:
    only_timeouts = policy(handle_failure=lambda f: f.is_caused_by(TimeoutError))
    history = History().started("orch").task_scheduled(1, "flaky").new().orchestrator_started().task_failed(1)
    assert "boom" in failed_with(run(history, retrying(only_timeouts))).errorMessage

    history = (History().started("orch").task_scheduled(1, "flaky").new().orchestrator_started()
               .task_failed(1, failure("fatal", non_retriable=True)))
    assert "fatal" in failed_with(run(history, retrying(policy()))).errorMessage


def test_sub_orchestrations_retry_with_the_same_instance_id() -> None:
    orch = retrying(policy(), sub=True)
    history = History().started("orch").sub_created(1, "child", "kid").new().orchestrator_started().sub_failed(1)
    fire = timer_at(run(history, orch).actions)
    history.timer_created(2, fire).orchestrator_started(fire).timer_fired(2, fire)
    (again,) = run(history, orch).actions
    assert (again.id, again.createSubOrchestration.instanceId, again.createSubOrchestration.input.value) == (
        1, "kid", "5")


def test_retry_policy_validates_its_arguments() -> None:
    with pytest.raises(ValueError):
        policy(max_number_of_attempts=0)
    with pytest.raises(ValueError):
        policy(backoff_coefficient=0.5)
    with pytest.raises(ValueError):
        policy(first_retry_interval=timedelta(seconds=-1))


class Order(pydantic.BaseModel):
    sku: str
    qty: int


@dataclasses.dataclass
class Receipt:
    total: float
    lines: list[str]


def price(ctx: task.ActivityContext, order: Order) -> Receipt:
    return Receipt(total=order.qty * 2.5, lines=[order.sku])


def shop(ctx: task.OrchestrationContext, order: Order) -> Any:
    assert isinstance(order, Order)
    receipt = yield ctx.call_activity(price, input=order)
    assert isinstance(receipt, Receipt)
    explicit = yield ctx.call_activity("price", input=order, return_type=Receipt)
    assert isinstance(explicit, Receipt)
    return receipt


def test_inputs_and_results_are_rebuilt_from_annotations_and_return_type() -> None:
    history = History().new().started("shop", {"sku": "x", "qty": 2})
    (first,) = run(history, shop).actions
    assert first.scheduleTask.input.value == '{"sku": "x", "qty": 2}'

    history = (History().started("shop", {"sku": "x", "qty": 2}).task_scheduled(1, "price")
               .orchestrator_started().task_completed(1, {"total": 5.0, "lines": ["x"]}).task_scheduled(2, "price")
               .new().orchestrator_started().task_completed(2, {"total": 5.0, "lines": ["x"]}))
    assert output(run(history, shop)) == {"total": 5.0, "lines": ["x"]}
