"""User code that raises outside ``Exception`` (or whose error cannot be printed) still ends its work item.

Before, such an exception ended only the job on the worker's thread: the work item was neither completed nor
handed back, its lease held for the emulator's lease timeout (300 s by default), and then it ran and failed the
same way again. Every wait below would have run out instead of seeing the failure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from durabletask import client, task, worker
from durabletask.entities import EntityInstanceId
from durabletask.task import EntityContext

from .conftest import Hub, unique_id

pytestmark = pytest.mark.adversarial

WAIT = 60  # far below the 300 s lease a stranded work item would wait for


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


class OddBaseError(BaseException):
    """Derives from ``BaseException`` directly, as some libraries' errors do."""


# What each probe raises, and the type name the failure must carry.
ESCAPING: dict[str, tuple[Callable[[], BaseException], str]] = {
    "exit": (lambda: SystemExit(3), "SystemExit"),
    "interrupt": (KeyboardInterrupt, "KeyboardInterrupt"),
    "generator_exit": (GeneratorExit, "GeneratorExit"),
    "odd": (lambda: OddBaseError("odd"), "OddBaseError"),
    "unprintable": (UnprintableError, "UnprintableError"),
}


def escaping_activity(ctx: task.ActivityContext, kind: str) -> None:
    raise ESCAPING[kind][0]()


async def escaping_async_activity(ctx: task.ActivityContext, kind: str) -> None:
    raise ESCAPING[kind][0]()


def plain_activity(ctx: task.ActivityContext, n: int) -> int:
    return n + 1


def not_a_number(ctx: task.ActivityContext, which: str) -> Any:
    return {"nan": math.nan, "inf": [1.0, math.inf]}[which]


def call_each(ctx: task.OrchestrationContext, spec: dict[str, Any]) -> Any:
    """Calls the activity with each kind in turn; returns each failure's type and message."""
    seen = []
    for kind in spec["kinds"]:
        try:
            yield ctx.call_activity(spec["activity"], input=kind)
        except task.TaskFailedError as failed:
            seen.append([failed.details.error_type, failed.details.message])
    seen.append((yield ctx.call_activity(plain_activity, input=41)))
    return seen


def test_activities_raising_outside_exception_fail_and_free_their_slots(hub: Hub) -> None:
    # Two slots and five escaping activities in a row, twice (sync and async), then a plain one: if any of them
    # kept its slot or its lease, the orchestration would stall.
    w = hub.start_worker(
        [call_each],
        [escaping_activity, escaping_async_activity, plain_activity],
        concurrency_options=worker.ConcurrencyOptions(maximum_concurrent_activity_work_items=2),
    )
    c = hub.client()
    kinds = list(ESCAPING)
    for activity in ("escaping_activity", "escaping_async_activity"):
        iid = c.schedule_new_orchestration(call_each, input={"activity": activity, "kinds": kinds},
                                           instance_id=unique_id("esc"))
        state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
        assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
        *failures, last = state.get_output()
        assert last == 42
        assert [error_type.rsplit(".", 1)[-1] for error_type, _ in failures] == [ESCAPING[k][1] for k in kinds]
        messages = dict(zip(kinds, (message for _, message in failures), strict=True))
        assert messages["exit"] == "3" and messages["odd"] == "odd"
        assert "UnprintableError" in messages["unprintable"] and "str() raised RuntimeError" in messages["unprintable"]
    w.stop()


def test_a_nan_or_infinite_activity_result_fails_the_activity_naming_the_problem(hub: Hub) -> None:
    hub.start_worker([call_each], [not_a_number, plain_activity])
    c = hub.client()
    iid = c.schedule_new_orchestration(call_each, input={"activity": "not_a_number", "kinds": ["nan", "inf"]},
                                       instance_id=unique_id("nan"))
    state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    *failures, last = state.get_output()
    assert last == 42 and len(failures) == 2
    for error_type, message in failures:
        assert error_type.endswith("NonFiniteNumberError") and "NaN or an infinity" in message


def escaping_orchestrator(ctx: task.OrchestrationContext, kind: str) -> Any:
    yield ctx.call_activity(plain_activity, input=1)
    raise ESCAPING[kind][0]()


async def escaping_async_orchestrator(ctx: task.OrchestrationContext, kind: str) -> Any:
    await ctx.call_activity(plain_activity, input=1)
    raise ESCAPING[kind][0]()


@pytest.mark.parametrize("orchestrator", [escaping_orchestrator, escaping_async_orchestrator])
def test_orchestrators_raising_outside_exception_fail_instead_of_staying_pending(hub: Hub, orchestrator: Any) -> None:
    hub.start_worker([orchestrator], [plain_activity])
    c = hub.client()
    started = {kind: c.schedule_new_orchestration(orchestrator, input=kind, instance_id=unique_id(kind))
               for kind in ESCAPING}
    for kind, iid in started.items():
        state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
        assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED, (kind, state)
        assert state.failure_details is not None
        assert state.failure_details.error_type.rsplit(".", 1)[-1] == ESCAPING[kind][1]


def escaping_entity(ctx: EntityContext, kind: Any) -> Any:
    if ctx.operation == "count":
        ctx.set_state(ctx.get_state(int, 0) + 1)
        return ctx.get_state(int, 0)
    ctx.set_state(-100)  # rolled back with the failed operation
    raise ESCAPING[kind][0]()


def call_entity_each(ctx: task.OrchestrationContext, key: str) -> Any:
    entity = EntityInstanceId("escaping_entity", key)
    seen = []
    for kind in ESCAPING:
        try:
            yield ctx.call_entity(entity, "raise", kind)
        except task.TaskFailedError as failed:
            # The orchestration sees EntityOperationFailedException; the operation's own failure is its cause.
            cause = failed.details.inner_failure
            seen.append(cause.error_type.rsplit(".", 1)[-1] if cause is not None else failed.details.error_type)
    seen.append((yield ctx.call_entity(entity, "count")))
    return seen


def test_entity_operations_raising_outside_exception_fail_alone(hub: Hub) -> None:
    w = hub.worker(concurrency_options=worker.ConcurrencyOptions(maximum_concurrent_entity_work_items=1))
    w.add_orchestrator(call_entity_each)
    w.add_entity(escaping_entity)
    w.start()
    c = hub.client()
    iid = c.schedule_new_orchestration(call_entity_each, input=unique_id("key"), instance_id=unique_id("ent"))
    state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert state.get_output() == [*(name for _, name in ESCAPING.values()), 1]
