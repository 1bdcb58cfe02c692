"""Distributed tracing end to end: the exact span tree of each orchestration pattern, in one connected trace.

Spans go to the OpenTelemetry SDK's in-memory exporter. Names, kinds and attributes are those Microsoft's SDK
gives (tests/interop/test_tracing_interop.py compares them with its spans side by side).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task
from durabletask.entities import EntityInstanceId
from durabletask.worker import ExtendedSessionOptions

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
    return (yield ctx.call_sub_orchestrator(chain, input=1, instance_id=f"{ctx.instance_id}-child"))


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
    producer = [
        s
        for s in finished
        if s.name.startswith("create_orchestration:") and s.attributes.get("durabletask.task.instance_id") == iid
    ]
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


@pytest.mark.parametrize("sessions", [None, ExtendedSessionOptions(max_cached_orchestrations=0)], ids=["kept", "off"])
def test_chain(hub: Hub, spans: Any, sessions: ExtendedSessionOptions | None) -> None:
    hub.start_worker([chain], [double], extended_sessions=sessions)
    got = run(hub, spans, chain, 1)
    want = [
        node(
            create("chain"),
            node(orch("chain"), activity_pair("double", 1), activity_pair("double", 2), activity_pair("double", 3)),
        )
    ]
    assert got == want, render(got)


def test_fan_out(hub: Hub, spans: Any) -> None:
    hub.start_worker([fan_out], [double])
    got = run(hub, spans, fan_out, 3)
    want = [node(create("fan_out"), node(orch("fan_out"), *(activity_pair("double", i) for i in (1, 2, 3))))]
    assert got == want, render(got)


def timer_span(name: str, task_id: int) -> str:
    attrs = {
        "fire_at": "<time>",
        "task.instance_id": "<id>",
        "task.name": name,
        "task.task_id": str(task_id),
        "type": "timer",
    }
    return f"orchestration:{name}:timer [internal] {attrs}"


def test_timer(hub: Hub, spans: Any) -> None:
    hub.start_worker([with_timer])
    got = run(hub, spans, with_timer, None)
    assert got == [node(create("with_timer"), node(orch("with_timer"), node(timer_span("with_timer", 1))))], render(got)


def test_retry(hub: Hub, spans: Any) -> None:
    flaky = flaky_calls()
    flaky.__name__ = "flaky"
    policy = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=100), max_number_of_attempts=3)

    def retrying(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_activity(flaky, retry_policy=policy))

    hub.start_worker([retrying], [flaky])
    got = run(hub, spans, retrying, None)
    want = [
        node(
            create("retrying"),
            node(
                orch("retrying"),
                activity_pair("flaky", 1, error="not yet"),
                node(timer_span("retrying", 2)),
                activity_pair("flaky", 1),
            ),
        )
    ]
    assert got == want, render(got)


def test_sub_orchestration(hub: Hub, spans: Any) -> None:
    hub.start_worker([parent, chain], [double])
    got = run(hub, spans, parent, None)
    child = {"task.instance_id": "<id>-child", "task.name": "chain", "task.task_id": "1", "type": "orchestration"}
    child_activities = [
        [label.replace("'<id>'", "'<id>-child'"), [[k.replace("'<id>'", "'<id>-child'"), []] for k, _ in kids]]
        for label, kids in (activity_pair("double", i) for i in (1, 2, 3))
    ]
    want = [
        node(
            create("parent"),
            node(
                orch("parent"),
                node(f"orchestration:chain [client] {child}", node(orch("chain", iid="<id>-child"), *child_activities)),
            ),
        )
    ]
    assert got == want, render(got)


def test_failure(hub: Hub, spans: Any) -> None:
    hub.start_worker([failing], [fail])
    c = hub.client()
    iid = unique_id()
    c.schedule_new_orchestration(failing, instance_id=iid)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == FAILED and state.failure_details is not None
    got = trace_of(spans, iid)
    message = state.failure_details.message.replace(iid, "<id>")
    want = [node(create("failing"), node(orch("failing", "Failed", message), activity_pair("fail", 1, error="boom")))]
    assert got == want, render(got)
    server = [s for s in spans.get_finished_spans() if s.name == "activity:fail" and s.kind.name == "SERVER"]
    assert [e.name for e in server[0].events] == ["exception"]
    assert server[0].events[0].attributes["exception.type"] == "ValueError"


def test_continue_as_new_is_one_span_per_execution(hub: Hub, spans: Any) -> None:
    hub.start_worker([counting], [double])
    got = run(hub, spans, counting, 0)
    want = [
        node(
            create("counting"),
            node(orch("counting"), activity_pair("double", 1)),
            node(orch("counting"), activity_pair("double", 1)),
            node(orch("counting")),
        )
    ]
    assert got == want, render(got)


def test_a_rewound_orchestration_stays_in_the_trace_it_was_started_in(hub: Hub, spans: Any) -> None:
    fixed = {"yet": False}

    def fragile(ctx: task.ActivityContext, value: int) -> int:
        if not fixed["yet"]:
            raise ValueError("not fixed")
        return value

    def two_steps(ctx: task.OrchestrationContext, _: Any) -> Any:
        first = yield ctx.call_activity(double, input=1)
        return (yield ctx.call_activity(fragile, input=first))

    hub.start_worker([two_steps], [double, fragile])
    c = hub.client()
    iid = unique_id()
    c.schedule_new_orchestration(two_steps, instance_id=iid)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == FAILED and state.failure_details is not None
    message = state.failure_details.message.replace(iid, "<id>")
    fixed["yet"] = True
    c.rewind_orchestration(iid, reason="fixed")
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED
    got = trace_of(spans, iid)
    # The rewound run is a new orchestration span in the same trace; it keeps the first call's result.
    want = [
        node(
            create("two_steps"),
            node(orch("two_steps", "Failed", message), activity_pair("double", 1),
                 activity_pair("fragile", 2, error="not fixed")),
            node(orch("two_steps"), activity_pair("fragile", 2)),
        )
    ]  # fmt: skip
    assert got == want, render(got)


def test_events_sent_and_raised_join_the_callers_trace(hub: Hub, spans: Any) -> None:
    from opentelemetry import trace

    def sender(ctx: task.OrchestrationContext, target: str) -> None:
        ctx.send_event(target, "go", data=1)

    hub.start_worker([sender, waiter])
    c = hub.client()
    iid, target = unique_id(), unique_id("target")
    with trace.get_tracer("test").start_as_current_span("request"):  # the web request that starts the work
        c.schedule_new_orchestration(waiter, instance_id=target)
        c.schedule_new_orchestration(sender, input=target, instance_id=iid)
    for instance in (iid, target):
        state = c.wait_for_orchestration_completion(instance, timeout=60)
        assert state is not None and state.runtime_status == COMPLETED
    c.raise_orchestration_event(target, "unused")  # after completion: still traced on the client
    finished = spans.get_finished_spans()
    request = next(s for s in finished if s.name == "request")
    got = tree(of_trace(finished, request.context.trace_id), {iid: "<id>", target: "<target>"})
    sent = {"event.target_instance_id": "<target>", "task.instance_id": "<id>", "task.name": "go", "type": "event"}
    target_orch = orch("waiter", iid="<target>")
    want = [
        node(
            "request [internal] {}",
            node(create("waiter").replace("'<id>'", "'<target>'"), node(target_orch)),
            node(create("sender"), node(orch("sender"), node(f"orchestration_event:go [producer] {sent}"))),
        )
    ]
    assert got == want, render(got)
    raised = [s for s in finished if s.name == "orchestration_event:unused"]
    assert len(raised) == 1 and raised[0].kind.name == "PRODUCER"
    assert dict(raised[0].attributes) == {
        "durabletask.type": "event",
        "durabletask.task.name": "unused",
        "durabletask.event.target_instance_id": target,
    }


def test_entity_operations_are_server_spans(hub: Hub, spans: Any) -> None:
    def counter(ctx: Any, value: int) -> int:
        state = (ctx.get_state(int) or 0) + value
        ctx.set_state(state)
        return state

    def calling(ctx: task.OrchestrationContext, key: str) -> Any:
        return (yield ctx.call_entity(EntityInstanceId("counter", key), "add", 2))

    w = hub.worker()
    w.add_orchestrator(calling)
    w.add_entity(counter)
    w.start()
    key = unique_id("k")
    got = run(hub, spans, calling, key)
    assert got == [node(create("calling"), node(orch("calling")))], render(got)
    entity = [s for s in spans.get_finished_spans() if s.name == "entity:counter:add"]
    assert len(entity) == 1 and entity[0].kind.name == "SERVER"
    assert dict(entity[0].attributes) == {
        "durabletask.type": "entity",
        "durabletask.task.name": "counter",
        "durabletask.task.instance_id": f"@counter@{key}",
        "durabletask.entity.operation": "add",
    }


def test_a_worker_restart_in_the_middle_records_each_span_once(hub: Hub, spans: Any) -> None:
    def paused(ctx: task.OrchestrationContext, _: Any) -> Any:
        first = yield ctx.call_activity(double, input=1)
        ctx.set_custom_status("waiting")
        yield ctx.wait_for_external_event("resume")
        return (yield ctx.call_activity(double, input=first))

    first = hub.start_worker([paused], [double])
    c = hub.client()
    iid = unique_id()
    c.schedule_new_orchestration(paused, instance_id=iid)
    state = c.wait_for_orchestration_start(iid, timeout=60)
    while state is None or state.serialized_custom_status != '"waiting"':  # the first result's turn is stored
        time.sleep(0.05)
        state = c.get_orchestration_state(iid)
    first.stop()
    hub.start_worker([paused], [double])  # a new worker process: no session, no tracer state
    c.raise_orchestration_event(iid, "resume")
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED
    got = trace_of(spans, iid)
    want = [node(create("paused"), node(orch("paused"), activity_pair("double", 1), activity_pair("double", 2)))]
    assert got == want, render(got)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_replay_safe_logs_carry_the_orchestrations_trace_and_span_ids(hub: Hub, spans: Any) -> None:
    logger = logging.getLogger(f"orchestrator-{unique_id()}")
    logger.setLevel(logging.INFO)
    handler = _Records()
    logger.addHandler(handler)

    def logging_chain(ctx: task.OrchestrationContext, _: Any) -> Any:
        log = ctx.create_replay_safe_logger(logger)
        log.info("before")
        yield ctx.call_activity(double, input=1)
        log.info("after")

    hub.start_worker([logging_chain], [double])
    run(hub, spans, logging_chain, None)
    orchestration = next(s for s in spans.get_finished_spans() if s.name == "orchestration:logging_chain")
    ids = {(getattr(r, "otelTraceID", None), getattr(r, "otelSpanID", None)) for r in handler.records}
    assert [r.getMessage() for r in handler.records] == ["before", "after"]
    assert ids == {(f"{orchestration.context.trace_id:032x}", f"{orchestration.context.span_id:016x}")}


def test_without_emission_context_still_flows_and_no_span_is_recorded(hub: Hub, spans: Any) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("test")

    def user_work(ctx: task.ActivityContext, _: Any) -> None:
        with tracer.start_as_current_span("user-work"):
            pass

    def quiet(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.call_activity(user_work)

    hub.start_worker([quiet], [user_work], emit_trace_spans=False)
    c = client.TaskHubGrpcClient(host_address=hub.address, metadata=hub.metadata, emit_trace_spans=False)
    iid = unique_id()
    with tracer.start_as_current_span("request"):
        c.schedule_new_orchestration(quiet, instance_id=iid)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    c.close()
    assert state is not None and state.runtime_status == COMPLETED
    finished = spans.get_finished_spans()
    assert sorted(s.name for s in finished) == ["request", "user-work"]
    assert tree(finished) == [node("request [internal] {}", node("user-work [internal] {}"))]


def test_a_restarted_orchestration_joins_the_original_trace(hub: Hub, spans: Any) -> None:
    hub.start_worker([chain], [double])
    c = hub.client()
    iid = unique_id()
    c.schedule_new_orchestration(chain, input=1, instance_id=iid)
    c.wait_for_orchestration_completion(iid, timeout=60)
    c.restart_orchestration(iid)
    c.wait_for_orchestration_start(iid, timeout=60)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == COMPLETED
    run_tree = node(orch("chain"), *(activity_pair("double", i) for i in (1, 2, 3)))
    got = trace_of(spans, iid)
    assert got == [node(create("chain"), run_tree, run_tree)], render(got)
