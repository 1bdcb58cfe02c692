"""Orchestrations and activities measured by the benchmarks.

Only the public ``durabletask`` API is used, so the same file runs under our SDK and under Microsoft's SDK
(each from its own interpreter).
"""

from __future__ import annotations

from typing import Any

from durabletask import task


def step(ctx: task.ActivityContext, value: int) -> int:
    return value + 1


def chain3(ctx: task.OrchestrationContext, value: int) -> Any:
    for _ in range(3):
        value = yield ctx.call_activity(step, input=value)
    return value


def long_chain(ctx: task.OrchestrationContext, length: int) -> Any:
    value = 0
    for _ in range(length):
        value = yield ctx.call_activity(step, input=value)
    return value


def fan_out(ctx: task.OrchestrationContext, count: int) -> Any:
    results = yield task.when_all([ctx.call_activity(step, input=i) for i in range(count)])
    return sum(results)


ORCHESTRATORS = (chain3, long_chain, fan_out)
ACTIVITIES = (step,)
