"""Orchestrators, activities and entities of the interop scenarios, written once against the public API.

The same source runs under Microsoft's SDK (imported by the peer from this folder via an explicit ``sys.path``
entry) and under ours, so each function uses only names both packages export.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from datetime import timedelta
from pathlib import Path
from typing import Any

from durabletask import task
from durabletask.entities import EntityInstanceId

Orchestration = Generator[Any, Any, Any]

FIXED_MARKER = "fixed"


def bump(directory: str, name: str) -> int:
    """Append one line to ``directory/name`` and return how many lines it now has (one per execution)."""
    path = Path(directory) / name
    with path.open("a", encoding="utf-8") as handle:
        handle.write("x\n")
    return len(path.read_text(encoding="utf-8").splitlines())


def executions(directory: str, name: str) -> int:
    path = Path(directory) / name
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


# Activities ------------------------------------------------------------------------------------------------------


def hello(ctx: task.ActivityContext, name: str) -> str:
    return f"Hello {name}!"


def double(ctx: task.ActivityContext, n: int) -> int:
    return n * 2


def flaky(ctx: task.ActivityContext, args: dict[str, Any]) -> str:
    """Fails its first ``args['failures']`` executions, counted in a file so retries in any process see them."""
    count = bump(args["dir"], args["name"])
    if count <= args["failures"]:
        raise RuntimeError(f"attempt {count} failed")
    return f"ok after {count}"


def fragile(ctx: task.ActivityContext, args: dict[str, Any]) -> str:
    """Fails until the marker file exists; every execution is counted."""
    count = bump(args["dir"], args["name"])
    if not (Path(args["dir"]) / FIXED_MARKER).exists():
        raise RuntimeError("dependency missing")
    return f"{args['name']}:{count}"


def broken(ctx: task.ActivityContext, _: Any) -> None:
    raise ValueError("broken on purpose")


def nap(ctx: task.ActivityContext, seconds: float) -> float:
    """Sleeps ``seconds``: an activity that outlives a deadline set by its caller."""
    time.sleep(seconds)
    return seconds


def specialty_a(ctx: task.ActivityContext, n: int) -> dict[str, Any]:
    return {"activity": "a", "n": n, "pid": os.getpid()}


def specialty_b(ctx: task.ActivityContext, n: int) -> dict[str, Any]:
    return {"activity": "b", "n": n, "pid": os.getpid()}


# Orchestrators ---------------------------------------------------------------------------------------------------


def chaining(ctx: task.OrchestrationContext, _: Any) -> Orchestration:
    results = []
    for city in ("Tokyo", "Seattle", "London"):
        results.append((yield ctx.call_activity(hello, input=city)))
    return results


def fan_out_fan_in(ctx: task.OrchestrationContext, count: int) -> Orchestration:
    values = yield task.when_all([ctx.call_activity(double, input=i) for i in range(count)])
    return sum(values)


def timer(ctx: task.OrchestrationContext, seconds: float) -> Orchestration:
    before = ctx.current_utc_datetime
    yield ctx.create_timer(timedelta(seconds=seconds))
    waited = ctx.current_utc_datetime - before
    return {"fired": True, "waited_long_enough": waited >= timedelta(seconds=seconds)}


def approval(ctx: task.OrchestrationContext, _: Any) -> Orchestration:
    value = yield ctx.wait_for_external_event("approve")
    return f"approved:{value}"


def approval_with_timeout(ctx: task.OrchestrationContext, seconds: float) -> Orchestration:
    event = ctx.wait_for_external_event("approve")
    deadline = ctx.create_timer(timedelta(seconds=seconds))
    winner = yield task.when_any([event, deadline])
    if winner is event:
        return f"approved:{event.get_result()}"
    return "timed out"


def child(ctx: task.OrchestrationContext, n: int) -> Orchestration:
    value = yield ctx.call_activity(double, input=n)
    return value + 1


def parent(ctx: task.OrchestrationContext, count: int) -> Orchestration:
    children = [
        ctx.call_sub_orchestrator(child, input=i, instance_id=f"{ctx.instance_id}-child-{i}") for i in range(count)
    ]
    return (yield task.when_all(children))


def retrying(ctx: task.OrchestrationContext, args: dict[str, Any]) -> Orchestration:
    policy = task.RetryPolicy(
        first_retry_interval=timedelta(seconds=0.2), max_number_of_attempts=args["attempts"], backoff_coefficient=1.0
    )
    return (yield ctx.call_activity(flaky, input=args, retry_policy=policy))


def retrying_with_timeout(ctx: task.OrchestrationContext, args: dict[str, Any]) -> Orchestration:
    # Retries would start at +0.5, +1.5, +3.5 and +7.5 s; the 7 s timeout leaves out the last one.
    policy = task.RetryPolicy(
        first_retry_interval=timedelta(seconds=0.5),
        max_number_of_attempts=5,
        backoff_coefficient=2.0,
        max_retry_interval=timedelta(seconds=5),
        retry_timeout=timedelta(seconds=7),
    )
    return (yield ctx.call_activity(flaky, input=args, retry_policy=policy))


def counter(ctx: task.OrchestrationContext, n: int) -> Orchestration:
    if n < 3:
        yield ctx.call_activity(double, input=n)
        ctx.continue_as_new(n + 1)
        return None
    return n


def echo(ctx: task.OrchestrationContext, value: Any) -> Any:
    return value


def failing(ctx: task.OrchestrationContext, _: Any) -> Orchestration:
    yield ctx.call_activity(broken)
    return "unreachable"


def calls_unknown(ctx: task.OrchestrationContext, _: Any) -> Orchestration:
    return (yield ctx.call_activity("no_such_activity"))


def waiter(ctx: task.OrchestrationContext, _: Any) -> Orchestration:
    yield ctx.wait_for_external_event("never")
    return "done"


def rewindable(ctx: task.OrchestrationContext, directory: str) -> Orchestration:
    first = yield ctx.call_activity(fragile_free, input={"dir": directory, "name": "steady"})
    second = yield ctx.call_activity(fragile, input={"dir": directory, "name": "fragile"})
    return [first, second]


def fragile_free(ctx: task.ActivityContext, args: dict[str, Any]) -> str:
    """Always succeeds; counts its executions so a rewind that reruns it is caught."""
    return f"{args['name']}:{bump(args['dir'], args['name'])}"


def specialists(ctx: task.OrchestrationContext, count: int) -> Orchestration:
    calls = []
    for i in range(count):
        calls.append(ctx.call_activity(specialty_a, input=i))
        calls.append(ctx.call_activity(specialty_b, input=i))
    return (yield task.when_all(calls))


def handoff(ctx: task.OrchestrationContext, _: Any) -> Orchestration:
    """Pauses between two activities so that a second worker can take the instance over."""
    first = yield ctx.call_activity(hello, input="first")
    ctx.set_custom_status("waiting")
    second = yield ctx.wait_for_external_event("go")
    return [first, (yield ctx.call_activity(hello, input=second))]


def eventful(ctx: task.OrchestrationContext, name: str) -> Orchestration:
    """One of each kind of durable call, in an order that gives every backend the same history."""
    greeting = yield ctx.call_activity(hello, input=name)
    yield ctx.create_timer(timedelta(seconds=0.2))
    ctx.set_custom_status({"stage": "waiting"})
    answer = yield ctx.wait_for_external_event("go")
    child_value = yield ctx.call_sub_orchestrator(child, input=2, instance_id=f"{ctx.instance_id}-child")
    return {"greeting": greeting, "answer": answer, "child": child_value}


def versioned(ctx: task.OrchestrationContext, _: Any) -> dict[str, Any]:
    # The process ID tells the test which worker ran the orchestration; it never changes within one worker.
    return {"version": ctx.version, "pid": os.getpid()}


# Failure properties -----------------------------------------------------------------------------------------------


class CodedError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class CodeProvider:
    """An ``ExceptionPropertiesProvider``: a coded error's code and tags; nothing for other exceptions."""

    def get_exception_properties(self, exception: Exception) -> dict[str, Any] | None:
        if isinstance(exception, CodedError):
            return {"code": exception.code, "tags": ["coded", None, True], "nested": {"depth": 2}}
        if isinstance(exception, KeyError):
            return {"missing": str(exception)}
        return None


def coded_activity(ctx: task.ActivityContext, code: int) -> None:
    try:
        raise KeyError("inner")
    except KeyError as error:
        raise CodedError("activity failed", code) from error


def coded_entity(ctx: Any, _: Any) -> None:
    raise CodedError("entity failed", 5)


def coded_failures(ctx: task.OrchestrationContext, kind: str) -> Orchestration:
    if kind == "activity":
        yield ctx.call_activity(coded_activity, input=42)
    elif kind == "entity":
        yield ctx.call_entity(EntityInstanceId("coded_entity", "e1"), "boom")
    raise CodedError("orchestrator failed", 7)


# Entities --------------------------------------------------------------------------------------------------------


def tally(ctx: Any, value: Any) -> Any:
    """A counter entity: ``add`` returns the new total, ``get`` the current one."""
    current = ctx.get_state(int, 0)
    if ctx.operation == "add":
        ctx.set_state(current + value)
        return current + value
    if ctx.operation == "get":
        return current
    if ctx.operation == "delete":
        ctx.set_state(None)
        return None
    if ctx.operation == "explode":
        raise RuntimeError(f"exploded at {current}")
    raise ValueError(f"unknown operation {ctx.operation}")


def entity_user(ctx: task.OrchestrationContext, key: str) -> Orchestration:
    first, second = EntityInstanceId("tally", f"{key}-a"), EntityInstanceId("tally", f"{key}-b")
    after_call = yield ctx.call_entity(first, "add", 3)
    lock = yield ctx.lock_entities([first, second])
    with lock:
        in_lock_first = yield ctx.call_entity(first, "add", 1)
        in_lock_second = yield ctx.call_entity(second, "add", 1)
    ctx.signal_entity(second, "add", 10)
    return [after_call, in_lock_first, in_lock_second]


def entity_failure(ctx: task.OrchestrationContext, key: str) -> Orchestration:
    """Calls an entity operation that raises, and reports what the orchestration saw."""
    try:
        yield ctx.call_entity(EntityInstanceId("tally", key), "explode")
    except Exception as error:
        return {"caught": type(error).__name__, "message": str(error)}
    return {"caught": None}
