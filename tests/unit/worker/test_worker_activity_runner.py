"""The activity runner on its own: inputs by annotation, sync and async functions, failures."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
from typing import Any

import pydantic
import pytest
from worker_fakes import activity_item

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._worker.activity_runner import ActivityRunner, is_async_callable
from durabletask.serialization import JsonDataConverter
from durabletask.task import ActivityContext

LOG = logging.getLogger("durabletask-worker-tests")


@dataclasses.dataclass
class Order:
    item: str
    quantity: int


class Customer(pydantic.BaseModel):
    name: str
    vip: bool = False


def runner_for(*fns: Any, **kwargs: Any) -> ActivityRunner:
    registry = Registry()
    for fn in fns:
        registry.add_activity(fn)
    return ActivityRunner(registry, logger=LOG, **kwargs)


def request(name: str, payload: str | None = None, task_id: int = 3) -> pb.ActivityRequest:
    return activity_item(name, payload, task_id=task_id, instance_id="orch-1").activityRequest


def result(response: pb.ActivityResponse) -> Any:
    assert not response.HasField("failureDetails"), response.failureDetails
    return json.loads(response.result.value) if response.HasField("result") else None


def test_sync_activity_gets_context_and_input() -> None:
    seen: list[Any] = []

    def greet(ctx: ActivityContext, name: str) -> str:
        seen.append((type(ctx), ctx.orchestration_id, ctx.task_id))
        return f"hello {name}"

    response = runner_for(greet).run(request("greet", '"ada"', task_id=5), "tok")
    assert result(response) == "hello ada"
    assert (response.instanceId, response.taskId, response.completionToken) == ("orch-1", 5, "tok")
    assert seen == [(ActivityContext, "orch-1", 5)]


def test_dataclass_and_pydantic_inputs_are_rebuilt() -> None:
    def total(ctx: Any, order: Order) -> int:
        assert isinstance(order, Order)
        return order.quantity * 2

    def badge(ctx: Any, customer: Customer) -> str:
        assert isinstance(customer, Customer)
        return customer.name + ("*" if customer.vip else "")

    runner = runner_for(total, badge)
    assert result(runner.run(request("total", '{"item":"pen","quantity":4}'), "t")) == 8
    assert result(runner.run(request("badge", '{"name":"Bo","vip":true}'), "t")) == "Bo*"


def test_results_are_encoded_and_none_stays_absent() -> None:
    def make(ctx: Any, _: Any) -> Order:
        return Order("cup", 2)

    def nothing(ctx: Any, _: Any) -> None:
        return None

    runner = runner_for(make, nothing)
    assert result(runner.run(request("make"), "t")) == {"item": "cup", "quantity": 2}
    response = runner.run(request("nothing"), "t")
    assert not response.HasField("result") and not response.HasField("failureDetails")


def test_unannotated_input_arrives_as_plain_json() -> None:
    def echo(ctx, value):  # type: ignore[no-untyped-def]
        return value

    assert result(runner_for(echo).run(request("echo", '{"a":[1,2]}'), "t")) == {"a": [1, 2]}


def test_failure_details_carry_type_message_trace_and_cause() -> None:
    def fail(ctx: Any, _: Any) -> None:
        try:
            raise KeyError("inner")
        except KeyError as exc:
            raise ValueError("outer problem") from exc

    details = runner_for(fail).run(request("fail"), "t").failureDetails
    assert details.errorType == "builtins.ValueError"
    assert details.errorMessage == "outer problem"
    assert "in fail" in details.stackTrace.value
    assert details.innerFailure.errorType == "builtins.KeyError"


def test_unregistered_activity_fails_naming_it() -> None:
    response = runner_for().run(request("nope"), "t")
    assert response.failureDetails.errorType == "durabletask.worker.ActivityNotRegisteredError"
    assert "'nope'" in response.failureDetails.errorMessage


def test_oversized_result_fails_the_activity() -> None:
    def huge(ctx: Any, _: Any) -> str:
        return "x" * (1024 * 1024 + 1)

    details = runner_for(huge).run(request("huge"), "t").failureDetails
    assert details.errorType == "durabletask._errors.PayloadTooLargeError"
    assert "activity result" in details.errorMessage


def test_async_activity() -> None:
    async def slow_upper(ctx: Any, text: str) -> str:
        await asyncio.sleep(0)
        return text.upper()

    runner = runner_for(slow_upper)
    req = request("slow_upper", '"abc"')
    assert runner.is_async(req)
    assert result(asyncio.run(runner.run_async(req, "t"))) == "ABC"


def test_async_activity_failure() -> None:
    async def broken(ctx: Any, _: Any) -> None:
        raise RuntimeError("async boom")

    response = asyncio.run(runner_for(broken).run_async(request("broken"), "t"))
    assert response.failureDetails.errorMessage == "async boom"


def test_sync_function_returning_an_awaitable_is_awaited() -> None:
    async def add(ctx: Any, value: int, extra: int) -> int:
        return value + extra

    partial = functools.partial(add, extra=1)
    registry = Registry()
    registry.add_activity(partial, name="add_one")
    runner = ActivityRunner(registry, logger=LOG)
    assert result(runner.run(request("add_one", "41"), "t")) == 42


def test_custom_data_converter_is_used() -> None:
    class Upper(JsonDataConverter):
        def serialize(self, value: Any) -> str | None:
            text = super().serialize(value)
            return text.upper() if text else text

    def echo(ctx: Any, value: str) -> str:
        return value

    assert result(runner_for(echo, data_converter=Upper()).run(request("echo", '"quiet"'), "t")) == "QUIET"


def test_is_async_callable() -> None:
    class AsyncCallable:
        async def __call__(self, ctx: Any, value: Any) -> None: ...

    class SyncCallable:
        def __call__(self, ctx: Any, value: Any) -> None: ...

    async def coro(ctx: Any, value: Any) -> None: ...

    assert is_async_callable(coro)
    assert is_async_callable(AsyncCallable())
    assert not is_async_callable(SyncCallable())
    assert not is_async_callable(print)


@pytest.mark.parametrize("payload", ["{bad", "[1,"])
def test_undecodable_input_fails_the_activity(payload: str) -> None:
    def take(ctx: Any, value: Any) -> None: ...

    details = runner_for(take).run(request("take", payload), "t").failureDetails
    assert details.errorType == "durabletask._errors.SerializationError"


@dataclasses.dataclass
class Positive:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise TypeError("value must not be negative")


def test_an_input_its_type_rejects_arrives_as_parsed() -> None:
    seen: list[Any] = []

    def take(ctx: Any, value: Positive) -> None:
        seen.append(value)

    runner = runner_for(take)
    assert runner.run(request("take", '{"value": 2}'), "t").HasField("result") is False and seen == [Positive(2)]
    # Best-effort, as Microsoft's converter: the dataclass refuses the payload, so the activity gets the dict.
    assert not runner.run(request("take", '{"value": -1}'), "t").HasField("failureDetails")
    assert seen == [Positive(2), {"value": -1}]
