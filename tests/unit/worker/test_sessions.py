"""The extended-session cache and the orchestration runner's use of it (continuations, misses, streaming)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from google.protobuf import struct_pb2

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._worker.orchestration_runner import Executor, OrchestrationRunner
from durabletask._worker.registry import WorkerRegistry
from durabletask._worker.session_cache import ExtendedSessionOptions, SessionCache, is_continuation, offers_session

LOG = logging.getLogger("durabletask-session-tests")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_options_validate_and_zero_disables() -> None:
    assert not ExtendedSessionOptions(max_cached_orchestrations=0).enabled
    assert ExtendedSessionOptions().enabled
    with pytest.raises(ValueError):
        ExtendedSessionOptions(max_cached_orchestrations=-1)
    with pytest.raises(ValueError):
        ExtendedSessionOptions(idle_timeout_seconds=0)


def test_cache_keeps_the_most_recently_used_within_its_size() -> None:
    cache: SessionCache[str] = SessionCache(ExtendedSessionOptions(max_cached_orchestrations=2))
    cache.put("a", "x", "A")
    cache.put("b", "x", "B")
    assert cache.take("a", "x") == "A"
    cache.put("a", "x", "A")  # now b is the least recently used
    cache.put("c", "x", "C")
    assert len(cache) == 2 and cache.evictions == 1
    assert cache.take("b", "x") is None
    assert cache.take("a", "x") == "A" and cache.take("c", "x") == "C"


def test_only_the_newest_work_item_of_an_instance_leaves_its_executor() -> None:
    cache: SessionCache[str] = SessionCache(ExtendedSessionOptions())
    slow = cache.begin("a")  # a work item whose lease expires while it runs
    redelivered = cache.begin("a")
    cache.put("a", "x", "newer", redelivered)
    cache.put("a", "x", "stale", slow)  # finishes last, but must not replace the newer state
    assert cache.take("a", "x") == "newer"
    cache.discard("a", slow)
    assert len(cache) == 0


def test_cache_drops_idle_entries_and_other_executions() -> None:
    clock = Clock()
    cache: SessionCache[str] = SessionCache(ExtendedSessionOptions(idle_timeout_seconds=10), clock=clock)
    cache.put("a", "e1", "A")
    cache.put("b", "e1", "B")
    clock.now = 5
    cache.put("b", "e1", "B")
    clock.now = 11
    assert cache.take("a", "e1") is None  # idle for 11 s
    assert cache.take("b", "e2") is None  # a different execution (continued as new) is never resumed
    assert len(cache) == 0


def continuation(new_events: Sequence[pb.HistoryEvent], execution_id: str = "e1") -> pb.OrchestratorRequest:
    request = pb.OrchestratorRequest(instanceId="i", newEvents=list(new_events))
    request.executionId.value = execution_id
    request.properties["IncludePastEvents"].CopyFrom(struct_pb2.Value(bool_value=False))
    return request


def full(new_events: Sequence[pb.HistoryEvent], *, offered: bool = True) -> pb.OrchestratorRequest:
    """A work item with its whole history; ``offered``: from a backend that continues kept sessions."""
    request = pb.OrchestratorRequest(instanceId="i", newEvents=list(new_events))
    request.executionId.value = "e1"
    if offered:
        request.properties["IncludePastEvents"].CopyFrom(struct_pb2.Value(bool_value=True))
    return request


def started(name: str) -> list[pb.HistoryEvent]:
    begin = pb.HistoryEvent(eventId=-1, orchestratorStarted=pb.OrchestratorStartedEvent())
    start = pb.HistoryEvent(eventId=-1, executionStarted=pb.ExecutionStartedEvent(name=name))
    start.executionStarted.orchestrationInstance.instanceId = "i"
    return [begin, start]


def completed(task_id: int, result: str) -> list[pb.HistoryEvent]:
    begin = pb.HistoryEvent(eventId=-1, orchestratorStarted=pb.OrchestratorStartedEvent())
    done = pb.HistoryEvent(eventId=-1, taskCompleted=pb.TaskCompletedEvent(taskScheduledId=task_id))
    done.taskCompleted.result.value = result
    return [begin, done]


calls: list[int] = []


def two_steps(ctx: task.OrchestrationContext, _: Any) -> Any:
    calls.append(1)
    a = yield ctx.call_activity("step", input=1)
    b = yield ctx.call_activity("step", input=a)
    return b


def make_runner(cache: SessionCache[Executor] | None, fetch: Any = None) -> OrchestrationRunner:
    registry = WorkerRegistry()
    registry.add_orchestrator(two_steps)
    return OrchestrationRunner(
        registry, lambda: OrchestrationExecutor(registry, logger=LOG), logger=LOG, sessions=cache, fetch_history=fetch
    )


def kinds(response: pb.OrchestratorResponse | None) -> list[str | None]:
    assert response is not None
    return [a.WhichOneof("orchestratorActionType") for a in response.actions]


def test_is_continuation_reads_the_property() -> None:
    assert is_continuation(continuation([]))
    assert not is_continuation(pb.OrchestratorRequest(instanceId="i"))
    assert not is_continuation(full([]))
    assert offers_session(full([])) and offers_session(continuation([]))
    assert not offers_session(full([], offered=False))


def test_from_a_backend_that_never_continues_sessions_nothing_is_kept() -> None:
    calls.clear()
    cache: SessionCache[Executor] = SessionCache(ExtendedSessionOptions())
    runner = make_runner(cache)
    assert kinds(runner.run(full(started("two_steps")), "t1").response) == ["scheduleTask"]
    assert len(cache) == 1
    # The same instance from a backend that sends full histories only: what was kept for it goes too.
    scheduled = pb.HistoryEvent(eventId=1, taskScheduled=pb.TaskScheduledEvent(name="step"))
    history = [*started("two_steps"), scheduled, *completed(1, "2")]
    assert kinds(runner.run(full(history, offered=False), "t2").response) == ["scheduleTask"]
    assert len(cache) == 0
    assert kinds(runner.run(full([*started("two_steps")], offered=False), "t3").response) == ["scheduleTask"]
    assert len(cache) == 0 and calls == [1, 1, 1]  # each full work item ran the code again


def test_runner_resumes_a_held_executor_without_rerunning_the_code() -> None:
    calls.clear()
    cache: SessionCache[Executor] = SessionCache(ExtendedSessionOptions())
    runner = make_runner(cache)
    first = full(started("two_steps"))
    assert kinds(runner.run(first, "t1").response) == ["scheduleTask"]
    assert len(cache) == 1

    second = runner.run(continuation(completed(1, "2")), "t2").response
    assert kinds(second) == ["scheduleTask"]
    assert calls == [1]  # the generator was resumed, not restarted

    last = runner.run(continuation(completed(2, "3")), "t3").response
    assert last is not None and last.actions[0].completeOrchestration.result.value == "3"
    assert len(cache) == 0  # a finished orchestration is not kept


def test_a_missing_executor_asks_for_the_history() -> None:
    runner = make_runner(SessionCache(ExtendedSessionOptions()))
    response = runner.run(continuation(completed(0, "2")), "t").response
    assert response is not None and response.requiresHistory and not response.actions
    assert response.completionToken == "t"
    # Without a cache at all the answer is the same.
    response = make_runner(None).run(continuation(completed(0, "2")), "t").response
    assert response is not None and response.requiresHistory


def test_a_continuation_for_another_execution_asks_for_the_history() -> None:
    cache: SessionCache[Executor] = SessionCache(ExtendedSessionOptions())
    runner = make_runner(cache)
    first = full(started("two_steps"))
    runner.run(first, "t1")
    response = runner.run(continuation(completed(0, "2"), execution_id="e2"), "t2").response
    assert response is not None and response.requiresHistory


def test_streamed_histories_are_fetched_before_replaying() -> None:
    scheduled = pb.HistoryEvent(eventId=1, taskScheduled=pb.TaskScheduledEvent(name="step"))
    done = pb.HistoryEvent(eventId=-1, orchestratorCompleted=pb.OrchestratorCompletedEvent())
    fetched: list[str] = []

    def fetch(request: pb.OrchestratorRequest) -> list[pb.HistoryEvent]:
        fetched.append(request.instanceId)
        return [*started("two_steps"), scheduled, done]

    runner = make_runner(None, fetch)
    request = pb.OrchestratorRequest(instanceId="i", newEvents=completed(1, "5"), requiresHistoryStreaming=True)
    response = runner.run(request, "t").response
    assert fetched == ["i"]
    assert response is not None
    assert response.actions[0].scheduleTask.input.value == "5"


def test_a_failed_history_fetch_hands_the_work_item_back() -> None:
    def fetch(request: pb.OrchestratorRequest) -> list[pb.HistoryEvent]:
        raise ConnectionError("stream broke")

    runner = make_runner(None, fetch)
    request = pb.OrchestratorRequest(instanceId="i", newEvents=completed(0, "5"), requiresHistoryStreaming=True)
    outcome = runner.run(request, "t")
    assert outcome.response is None and "stream broke" in outcome.reason
