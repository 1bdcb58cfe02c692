"""Run in the interop peer's interpreter: Microsoft's in-memory backend plus its worker, on a given port.

Prints ``READY`` once both are up and stops when stdin closes. Not imported by the test suite.
"""

from __future__ import annotations

import sys

from durabletask import task, worker
from durabletask.testing import create_test_backend


def double(ctx: task.ActivityContext, value: int) -> int:
    return value * 2


def echo(ctx: task.OrchestrationContext, value: object) -> object:
    return value


def chain(ctx: task.OrchestrationContext, value: int):  # type: ignore[no-untyped-def]
    first = yield ctx.call_activity(double, input=value)
    second = yield ctx.call_activity(double, input=first)
    return second


def waiter(ctx: task.OrchestrationContext, _: object):  # type: ignore[no-untyped-def]
    ctx.set_custom_status("waiting")
    value = yield ctx.wait_for_external_event("go")
    return value


def failing(ctx: task.OrchestrationContext, _: object) -> None:
    raise ValueError("kaput")


def counter(ctx, value):  # type: ignore[no-untyped-def]
    current = ctx.get_state(int, 0)
    if ctx.operation == "add":
        ctx.set_state(current + value)
    return current


def main() -> None:
    port = int(sys.argv[1])
    backend = create_test_backend(port=port)
    w = worker.TaskHubGrpcWorker(host_address=f"localhost:{port}")
    for fn in (echo, chain, waiter, failing):
        w.add_orchestrator(fn)
    w.add_activity(double)
    w.add_entity(counter)
    # The backend queues work items until the worker's stream connects, so no wait is needed here.
    w.start()
    print("READY", flush=True)
    sys.stdin.read()
    w.stop()
    backend.stop()


if __name__ == "__main__":
    main()
