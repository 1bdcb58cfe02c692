"""Core orchestration patterns end to end: our worker and client over gRPC against the emulator."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from durabletask import client, task

from .conftest import Hub, unique_id

COMPLETED = client.OrchestrationStatus.COMPLETED
FAILED = client.OrchestrationStatus.FAILED


def double(ctx: task.ActivityContext, value: int) -> int:
    return value * 2


def fail_always(ctx: task.ActivityContext, message: str) -> None:
    raise ValueError(message)


def chain(ctx: task.OrchestrationContext, start: int) -> Any:
    value = start
    for _ in range(3):
        value = yield ctx.call_activity(double, input=value)
    return value


def fan_out(ctx: task.OrchestrationContext, count: int) -> Any:
    results = yield task.when_all([ctx.call_activity(double, input=i) for i in range(count)])
    return sum(results)


def test_activity_chain(hub: Hub) -> None:
    hub.start_worker([chain], [double])
    c = hub.client()
    iid = c.schedule_new_orchestration(chain, input=1)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None
    assert state.runtime_status == COMPLETED, state.failure_details
    assert state.serialized_output == "8"
    assert state.name == "chain"


def test_fan_out_fan_in(hub: Hub) -> None:
    hub.start_worker([fan_out], [double])
    c = hub.client()
    iid = c.schedule_new_orchestration(fan_out, input=20)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.serialized_output == str(sum(2 * i for i in range(20)))


def test_activity_failure_surfaces_as_task_failed(hub: Hub) -> None:
    def catches(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            yield ctx.call_activity(fail_always, input="boom")
        except task.TaskFailedError as err:
            return f"caught {err.details.error_type}: {err.details.message}"
        return "not reached"

    def does_not_catch(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.call_activity(fail_always, input="kaput")

    hub.start_worker([catches, does_not_catch], [fail_always])
    c = hub.client()
    ok = c.schedule_new_orchestration(catches)
    bad = c.schedule_new_orchestration(does_not_catch)
    state = c.wait_for_orchestration_completion(ok, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED
    assert state.serialized_output == '"caught builtins.ValueError: boom"'
    state = c.wait_for_orchestration_completion(bad, timeout=30)
    assert state is not None and state.runtime_status == FAILED
    assert state.failure_details is not None
    assert "kaput" in state.failure_details.message
    with pytest.raises(client.OrchestrationFailedError):
        state.raise_if_failed()


def test_external_event_and_custom_status(hub: Hub) -> None:
    def approval(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.set_custom_status("waiting")
        answer = yield ctx.wait_for_external_event("Approval")
        ctx.set_custom_status("approved")
        return answer

    hub.start_worker([approval])
    c = hub.client()
    iid = c.schedule_new_orchestration(approval)
    c.wait_for_orchestration_start(iid, timeout=30)
    c.raise_orchestration_event(iid, "approval", data={"by": "ops"})  # names are case-insensitive
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED
    assert state.serialized_output == '{"by": "ops"}'
    assert state.serialized_custom_status == '"approved"'


def test_sub_orchestration_and_terminate(hub: Hub) -> None:
    def child(ctx: task.OrchestrationContext, value: int) -> Any:
        result = yield ctx.call_activity(double, input=value)
        return result + 1

    def parent(ctx: task.OrchestrationContext, value: int) -> Any:
        results = yield task.when_all([ctx.call_sub_orchestrator(child, input=value + i) for i in range(3)])
        return results

    def waits_forever(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.wait_for_external_event("never")

    hub.start_worker([parent, child, waits_forever], [double])
    c = hub.client()
    iid = c.schedule_new_orchestration(parent, input=10)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.serialized_output == "[21, 23, 25]"

    stuck = c.schedule_new_orchestration(waits_forever)
    c.wait_for_orchestration_start(stuck, timeout=30)
    c.terminate_orchestration(stuck, output="stopped by test")
    state = c.wait_for_orchestration_completion(stuck, timeout=30)
    assert state is not None
    assert state.runtime_status == client.OrchestrationStatus.TERMINATED
    assert state.serialized_output == '"stopped by test"'


def test_continue_as_new_counts_up(hub: Hub) -> None:
    def counter(ctx: task.OrchestrationContext, n: int) -> Any:
        if n < 5:
            ctx.continue_as_new(n + 1)
            return None
        value = yield ctx.call_activity(double, input=n)
        return value

    hub.start_worker([counter], [double])
    c = hub.client()
    iid = c.schedule_new_orchestration(counter, input=0)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.serialized_output == "10"
    assert state.serialized_input == "5"


def test_suspend_resume_buffers_events(hub: Hub) -> None:
    def waiter(ctx: task.OrchestrationContext, _: Any) -> Any:
        first = yield ctx.wait_for_external_event("go")
        return first

    hub.start_worker([waiter])
    c = hub.client()
    iid = c.schedule_new_orchestration(waiter)
    c.wait_for_orchestration_start(iid, timeout=30)
    c.suspend_orchestration(iid, reason="maintenance")
    _wait_status(c, iid, client.OrchestrationStatus.SUSPENDED)
    c.raise_orchestration_event(iid, "go", data=7)
    state = c.get_orchestration_state(iid)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.SUSPENDED
    c.resume_orchestration(iid, reason="done")
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED
    assert state.serialized_output == "7"


def _wait_status(c: client.TaskHubGrpcClient, iid: str, status: client.OrchestrationStatus) -> None:
    done = threading.Event()
    for _ in range(200):
        state = c.get_orchestration_state(iid)
        if state is not None and state.runtime_status == status:
            return
        done.wait(0.05)
    raise AssertionError(f"{iid} never reached {status}")


@dataclass
class Point:
    x: int
    y: int


class Route(BaseModel):
    name: str
    points: list[Point]


def test_typed_payloads_round_trip(hub: Hub) -> None:
    def stretch(ctx: task.ActivityContext, route: Route) -> Route:
        assert isinstance(route, Route)
        return Route(name=route.name.upper(), points=[Point(p.x * 2, p.y * 2) for p in route.points])

    def plan(ctx: task.OrchestrationContext, route: Route) -> Any:
        assert isinstance(route, Route)
        stretched = yield ctx.call_activity(stretch, input=route)
        return stretched

    hub.start_worker([plan], [stretch])
    c = hub.client()
    iid = c.schedule_new_orchestration(plan, input=Route(name="a", points=[Point(1, 2)]))
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.serialized_output == '{"name": "A", "points": [{"x": 2, "y": 4}]}'


def test_wait_timeout_raises_timeout_error(hub: Hub) -> None:
    def waits(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.wait_for_external_event("never")

    hub.start_worker([waits])
    c = hub.client()
    iid = c.schedule_new_orchestration(waits, instance_id=unique_id())
    with pytest.raises(TimeoutError):
        c.wait_for_orchestration_completion(iid, timeout=1)


def test_timer_with_timedelta(hub: Hub) -> None:
    def sleeper(ctx: task.OrchestrationContext, _: Any) -> Any:
        start = ctx.current_utc_datetime
        yield ctx.create_timer(timedelta(seconds=1))
        return (ctx.current_utc_datetime - start).total_seconds() >= 1

    hub.start_worker([sleeper])
    c = hub.client()
    iid = c.schedule_new_orchestration(sleeper)
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED
    assert state.serialized_output == "true"
