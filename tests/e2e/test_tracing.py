"""Distributed tracing end to end: the exact span tree of each orchestration pattern, in one connected trace.

Spans go to the OpenTelemetry SDK's in-memory exporter. Names, kinds and attributes are those Microsoft's SDK
gives (tests/interop/test_tracing_interop.py compares them with its spans side by side).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task
from durabletask.entities import EntityInstanceId

from .conftest import Hub, unique_id
from .tracing_support import exporter, of_trace, render, tree

pytestmark = pytest.mark.local_only

COMPLETED = client.OrchestrationStatus.COMPLETED
FAILED = client.OrchestrationStatus.FAILED


@pytest.fixture(autouse=True)
def spans() -> Iterator[Any]:
    found = exporter()
    found.clear()
    yield found
    found.clear()


def double(ctx: task.ActivityContext, value: int) -> int:
    return value * 2


def flaky_calls() -> Any:
    attempts = {"n": 0}

    def flaky(ctx: task.ActivityContext, _: Any) -> str:
        attempts["n"] += 1
        if attempts["n"] < 2:
            raise ValueError("not yet")
        return "ok"

    return flaky


def fail(ctx: task.ActivityContext, message: str) -> None:
    raise ValueError(message)


def chain(ctx: task.OrchestrationContext, start: int) -> Any:
    value = start
    for _ in range(3):
        value = yield ctx.call_activity(double, input=value)
    return value


def fan_out(ctx: task.OrchestrationContext, count: int) -> Any:
    return sum((yield task.when_all([ctx.call_activity(double, input=i) for i in range(count)])))


def with_timer(ctx: task.OrchestrationContext, _: Any) -> str:
    yield ctx.create_timer(timedelta(milliseconds=200))
    return "done"


def parent(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_sub_orchestration(chain, input=1, instance_id=f"{ctx.instance_id}-child"))


def waiter(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.wait_for_external_event("go"))


def failing(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_activity(fail, input="boom"))


def counting(ctx: task.OrchestrationContext, n: int) -> Any:
    if n < 2:
        yield ctx.call_activity(double, input=n)
        ctx.continue_as_new(n + 1)
        return None
    return n


def run(hub: Hub, spans: Any, orchestrator: Any, inp: Any, *, status: Any = COMPLETED, **kwargs: Any) -> list[Any]:
    """Schedules ``orchestrator``, waits for it, and returns the span tree of its trace."""
    c = hub.client()
    iid = unique_id()
    c.schedule_new_orchestration(orchestrator, input=inp, instance_id=iid)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == status
    return trace_of(spans, iid)


def trace_of(spans: Any, iid: str) -> list[Any]:
    finished = spans.get_finished_spans()
    producer = [s for s in finished if s.name.startswith("create_orchestration:")
                and s.attributes.get("durabletask.task.instance_id") == iid]
    assert len(producer) == 1, render(tree(finished))
    return tree(of_trace(finished, producer[0].context.trace_id), {iid: "<id>"})


def node(label: str, *children: list[Any]) -> list[Any]:
    return [label, list(children)]


def orch(name: str, status: str = "Completed", error: str | None = None, iid: str = "<id>") -> str:
    extra = f" ERROR({error})" if error else ""
    attrs = {"task.instance_id": iid, "task.name": name, "task.status": status, "type": "orchestration"}
    return f"orchestration:{name} [server]{extra} {attrs}"


def create(name: str) -> str:
    attrs = {"task.instance_id": "<id>", "task.name": name, "type": "orchestration"}
    return f"create_orchestration:{name} [producer] {attrs}"


def activity_pair(name: str, task_id: int, error: str | None = None) -> list[Any]:
    extra = f" ERROR({error})" if error else ""
    attrs = {"task.instance_id": "<id>", "task.name": name, "task.task_id": str(task_id), "type": "activity"}
    return node(f"activity:{name} [client]{extra} {attrs}", node(f"activity:{name} [server]{extra} {attrs}"))


def test_chain(hub: Hub, spans: Any) -> None:
    hub.start_worker([chain], [double])
    got = run(hub, spans, chain, 1)
    want = [node(create("chain"), node(orch("chain"), activity_pair("double", 1), activity_pair("double", 2),
                                       activity_pair("double", 3)))]
    assert got == want, render(got)
