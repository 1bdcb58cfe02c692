"""``async def`` orchestrators: the same executor, sequence IDs, actions and errors as their generator twins.

The central check plays a workflow with every kind of durable task against a small scripted backend: the
history its generator version writes must replay under the ``async def`` rewrite episode by episode, with
exactly the same actions, and the rewrite must write the same history when it runs on its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._replay.executor import OrchestrationExecutor
from durabletask.entities import EntityInstanceId

from . import test_rewind as rewinding
from .history import History, completion, failed_with, failure, kinds, output, run
from .test_simulated_runs import Backend, Step, expected_total, plan_orchestrator, steps

COUNTER = EntityInstanceId("counter", "c1")
ACCOUNT = EntityInstanceId("account", "a")
RETRY = task.RetryPolicy(first_retry_interval=timedelta(seconds=5), max_number_of_attempts=3)


# ---- one workflow, twice: every kind of durable task ----------------------------------------------


def order_generator(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    stock = yield ctx.call_activity("reserve", input=order)
    paid, shipped = yield task.when_all(
        [ctx.call_activity("pay", input=order), ctx.call_sub_orchestrator("ship", input=order, instance_id="ship-1")]
    )
    cancel = ctx.wait_for_external_event("cancel")
    winner = yield task.when_any([cancel, ctx.create_timer(timedelta(hours=1))])
    count = yield ctx.call_entity(COUNTER, "add", 1)
    with (yield ctx.lock_entities([ACCOUNT])):
        balance = yield ctx.call_entity(ACCOUNT, "get")
    try:
        retried = yield ctx.call_activity("flaky", retry_policy=RETRY)
    except task.TaskFailedError as error:
        retried = f"gave up: {error}"
    finally:
        ctx.set_custom_status("settled")
    return [stock, paid, shipped, winner is cancel, count, balance, retried]


async def order_async(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    stock = await ctx.call_activity("reserve", input=order)
    paid, shipped = await task.when_all(
        [ctx.call_activity("pay", input=order), ctx.call_sub_orchestrator("ship", input=order, instance_id="ship-1")]
    )
    cancel = ctx.wait_for_external_event("cancel")
    winner = await task.when_any([cancel, ctx.create_timer(timedelta(hours=1))])
    count = await ctx.call_entity(COUNTER, "add", 1)
    async with ctx.lock_entities([ACCOUNT]):
        balance = await ctx.call_entity(ACCOUNT, "get")
    try:
        retried = await ctx.call_activity("flaky", retry_policy=RETRY)
    except task.TaskFailedError as error:
        retried = f"gave up: {error}"
    finally:
        ctx.set_custom_status("settled")
    return [stock, paid, shipped, winner is cancel, count, balance, retried]


class Script:
    """A backend that answers every call one episode later; timers fire only when nothing else is left.

    ``flaky`` fails on its first attempt. ``events`` are raised, one per episode, when only timers remain.
    """

    def __init__(self, events: list[tuple[str, Any]]) -> None:
        self.history = History("order-1")
        self.events = list(events)
        self.answers: list[Callable[[History], Any]] = []
        self.timers: list[tuple[int, Any]] = []
        self.flaky_attempts = 0

    def start(self, input: Any) -> None:
        self.history.new().started("order", input)

    def record(self, actions: list[pb.OrchestratorAction]) -> pb.CompleteOrchestrationAction | None:
        h = self.history.commit()
        for action in actions:
            kind = action.WhichOneof("orchestratorActionType")
            if kind == "completeOrchestration":
                return action.completeOrchestration
            if kind == "scheduleTask":
                self._task(action.id, action.scheduleTask)
            elif kind == "createSubOrchestration":
                sub = action.createSubOrchestration
                h.sub_created(action.id, sub.name, sub.instanceId)
                self.answers.append(lambda h, i=action.id: h.sub_completed(i, "shipped"))
            elif kind == "createTimer":
                fire_at = action.createTimer.fireAt.ToDatetime()
                h.timer_created(action.id, fire_at)
                self.timers.append((action.id, fire_at))
            elif kind == "sendEntityMessage":
                self._entity(action.id, action.sendEntityMessage)
        return None

    def _task(self, id: int, scheduled: pb.ScheduleTaskAction) -> None:
        self.history.task_scheduled(id, scheduled.name)
        if scheduled.name == "flaky":
            self.flaky_attempts += 1
            if self.flaky_attempts == 1:
                self.answers.append(lambda h: h.task_failed(id, failure("flaky")))
                return
        self.answers.append(lambda h: h.task_completed(id, f"{scheduled.name} done"))

    def _entity(self, id: int, message: pb.SendEntityMessageAction) -> None:
        self.history.entity_message(id, message)
        if message.HasField("entityOperationCalled"):
            request = message.entityOperationCalled.requestId
            self.answers.append(lambda h: h.entity_completed(request, 7))
        elif message.HasField("entityLockRequested"):
            section = message.entityLockRequested.criticalSectionId
            self.answers.append(lambda h: h.lock_granted(section))

    def next_batch(self) -> None:
        h = self.history
        h.orchestrator_completed().new().orchestrator_started()
        answers, self.answers = self.answers, []
        for answer in answers:
            answer(h)
        if answers:
            return
        if self.events:
            h.event_raised(*self.events.pop(0))
            return
        timer_id, fire_at = self.timers.pop(0)
        h.orchestrator_started(fire_at).timer_fired(timer_id, fire_at)


def order_registry(fn: Callable[..., Any]) -> Registry:
    reg = Registry()
    reg.add_orchestrator(fn, name="order")
    return reg


def play(fn: Callable[..., Any], events: list[tuple[str, Any]]) -> tuple[Script, list[Any]]:
    """Run ``fn`` to the end, replaying the whole history each episode; returns the script and every episode."""
    script = Script(events)
    script.start({"id": 7})
    episodes = []
    for _ in range(40):
        old, new = list(script.history.old), list(script.history.new_events)
        result = OrchestrationExecutor(order_registry(fn)).execute("order-1", old, new)
        episodes.append((old, new, result))
        if script.record(list(result.actions)) is not None:
            return script, episodes
        script.next_batch()
    raise AssertionError("the workflow did not finish")


@pytest.mark.parametrize("events", [[("cancel", None)], []], ids=["event-wins", "timer-wins"])
def test_a_generator_history_replays_under_the_async_rewrite_with_the_same_actions(
    events: list[tuple[str, Any]],
) -> None:
    script, episodes = play(order_generator, events)
    for old, new, expected in episodes:
        replayed = OrchestrationExecutor(order_registry(order_async)).execute("order-1", old, new)
        assert (replayed.actions, replayed.encoded_custom_status) == (expected.actions, expected.encoded_custom_status)
    done = completion(episodes[-1][2])
    assert done.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED, done.failureDetails
    assert json.loads(done.result.value) == ["reserve done", "pay done", "shipped", bool(events), 7, 7, "flaky done"]
    assert episodes[-1][2].encoded_custom_status == '"settled"'

    # Written by the rewrite itself, the history is the same, event for event.
    own, _ = play(order_async, events)
    assert own.history.all == script.history.all


@settings(max_examples=60, deadline=None)
@given(plan=steps, data=st.data())
def test_random_workflows_replay_under_the_rewrite_and_resume_in_an_extended_session(
    plan: list[Step], data: st.DataObject
) -> None:
    async def plan_async(ctx: task.OrchestrationContext, plan: list[list[Any]]) -> Any:
        total = 0
        for kind, value in plan:
            if kind == "act":
                total += await ctx.call_activity("double", input=value)
            elif kind == "timer":
                await ctx.create_timer(timedelta(seconds=value))
            elif kind == "fan":
                total += sum(await task.when_all([ctx.call_activity("double", input=i) for i in range(value)]))
            else:
                total += await ctx.wait_for_external_event(f"E{value}")
        return total

    generator, rewrite = Registry(), Registry()
    generator.add_orchestrator(plan_orchestrator)
    rewrite.add_orchestrator(plan_async, name="plan_orchestrator")
    backend = Backend()
    started = pb.ExecutionStartedEvent(name="plan_orchestrator")
    started.input.value = json.dumps([list(step) for step in plan])
    batch = [backend.event(orchestratorStarted=pb.OrchestratorStartedEvent()), backend.event(executionStarted=started)]
    session = OrchestrationExecutor(rewrite)  # kept alive and resumed, as in an extended session
    actions = session.execute("sim", [], batch).actions
    for episode in range(100):
        assert actions == OrchestrationExecutor(generator).execute("sim", list(backend.history), batch).actions
        backend.history.extend(batch)
        outcome = backend.record(list(actions))
        if outcome is not None:
            assert outcome.orchestrationStatus == pb.ORCHESTRATION_STATUS_COMPLETED, outcome.failureDetails
            assert int(outcome.result.value) == expected_total(plan)
            return
        batch = backend.next_batch(data, everything=episode % 4 == 3)
        actions = session.resume(batch).actions
    raise AssertionError("the orchestration did not finish within 100 episodes")


# ---- errors, try/except/finally, async with ----------------------------------------------------------


def test_a_failed_task_raises_at_the_await_and_finally_blocks_run() -> None:
    async def careful(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            await ctx.call_activity("risky")
        except task.TaskFailedError as error:
            caught = error.details.message
        finally:
            cleanup = ctx.call_activity("cleanup")
        return [caught, await cleanup]

    h = History().started("careful").task_scheduled(1, "risky").new().orchestrator_started().task_failed(1)
    assert [(a.id, a.scheduleTask.name) for a in run(h, careful).actions] == [(2, "cleanup")]
    h.commit().task_scheduled(2, "cleanup").new().orchestrator_started().task_completed(2, "swept")
    assert output(run(h, careful)) == ["boom", "swept"]


def test_an_uncaught_task_failure_fails_the_orchestration_as_a_generator_failure_does() -> None:
    def gen(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_activity("risky"))

    async def coro(ctx: task.OrchestrationContext, _: Any) -> Any:
        return await ctx.call_activity("risky")

    def history() -> History:
        return History().started("o").task_scheduled(1, "risky").new().orchestrator_started().task_failed(1)

    gen.__name__ = coro.__name__ = "o"
    expected, got = failed_with(run(history(), gen)), failed_with(run(history(), coro))
    assert expected.errorType == "durabletask.task.TaskFailedError"
    assert (got.errorType, got.errorMessage, got.innerFailure) == (
        expected.errorType,
        expected.errorMessage,
        expected.innerFailure,
    )
    assert "return await ctx.call_activity" in got.stackTrace.value  # the user's line, where it was awaited


def test_non_determinism_is_reported_exactly_as_for_generators() -> None:
    def gen(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_activity("b"))

    async def coro(ctx: task.OrchestrationContext, _: Any) -> Any:
        return await ctx.call_activity("b")

    def history() -> History:
        return History().started("o").task_scheduled(1, "a").new().orchestrator_started().task_completed(1)

    gen.__name__ = coro.__name__ = "o"
    expected = failed_with(run(history(), gen))
    assert expected.errorType == "durabletask.task.NonDeterminismError"
    assert failed_with(run(history(), coro)).errorMessage == expected.errorMessage


def test_async_with_holds_the_entity_lock_for_the_block_even_when_it_raises() -> None:
    async def locked(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            async with ctx.lock_entities([ACCOUNT]) as lock:
                assert isinstance(lock, task.EntityLock)
                raise ValueError("inside")
        except ValueError:
            pass
        return await ctx.call_activity("after")

    first = run(History().new().started("locked"), locked)
    (message,) = [a.sendEntityMessage for a in first.actions]
    section = message.entityLockRequested.criticalSectionId
    h = History().started("locked").entity_message(1, message).new().orchestrator_started().lock_granted(section)
    actions = run(h, locked).actions
    assert [a.WhichOneof("orchestratorActionType") for a in actions] == ["sendEntityMessage", "scheduleTask"]
    assert actions[0].sendEntityMessage.HasField("entityUnlockSent")


def test_an_event_wait_that_times_out_raises_timeout_error_at_the_await() -> None:
    async def timed(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            return await ctx.wait_for_external_event("reply", timeout=timedelta(minutes=10))
        except TimeoutError:
            return "timed out"

    h = History().started("timed")
    fire = h.now + timedelta(minutes=10)
    h.timer_created(1, fire).new().orchestrator_started(fire).timer_fired(1, fire)
    assert output(run(h, timed)) == "timed out"


def test_losers_of_when_any_need_no_cancellation_and_their_late_results_are_ignored() -> None:
    async def race(ctx: task.OrchestrationContext, _: Any) -> Any:
        slow, timeout = ctx.call_activity("slow"), ctx.create_timer(timedelta(minutes=5))
        winner = await task.when_any([slow, timeout])
        return "timed out" if winner is timeout else await slow

    h = History().started("race")
    fire = h.now + timedelta(minutes=5)
    h.task_scheduled(1, "slow").timer_created(2, fire).new().orchestrator_started(fire).timer_fired(2, fire)
    assert output(run(h, race)) == "timed out"
    h.task_completed(1, "late")  # arrives in the same batch, after the winner: changes nothing
    assert output(run(h, race)) == "timed out"


def test_helper_coroutines_and_repeated_awaits_of_one_task_are_durable() -> None:
    async def twice(ctx: task.OrchestrationContext, value: int) -> int:
        return 2 * await ctx.call_activity("get", input=value)

    async def composed(ctx: task.OrchestrationContext, _: Any) -> Any:
        shared = ctx.call_activity("shared")
        return [await twice(ctx, 1), await shared, await shared]

    h = History().started("composed").task_scheduled(1, "shared").task_scheduled(2, "get")
    h.new().orchestrator_started().task_completed(1, "s").task_completed(2, 21)
    assert output(run(h, composed)) == [42, "s", "s"]


def test_continue_as_new_with_a_new_version_and_the_version_are_seen_alike() -> None:
    async def loop(ctx: task.OrchestrationContext, n: int) -> Any:
        await ctx.create_timer(timedelta(seconds=1))
        ctx.continue_as_new(n + 1, new_version=f"{ctx.version}.1")

    h = History().started("loop", 1, version="2")
    fire = h.now + timedelta(seconds=1)
    h.timer_created(1, fire).new().orchestrator_started(fire).timer_fired(1, fire)
    done = completion(run(h, loop))
    assert done.orchestrationStatus == pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW
    assert (done.result.value, done.newVersion.value) == ("2", "2.1")


def test_a_plain_async_orchestrator_without_awaits_completes_in_its_first_episode() -> None:
    async def quick(ctx: task.OrchestrationContext, name: str) -> str:
        return f"hello {name}"

    result = run(History().new().started("quick", "you"), quick)
    assert kinds(result) == ["completeOrchestration"] and output(result) == "hello you"


# ---- rewind ---------------------------------------------------------------------------------------


async def etl(ctx: task.OrchestrationContext, source: str) -> Any:
    raw = await ctx.call_activity("extract", input=source)
    clean = await ctx.call_activity("transform", input=raw)
    return await ctx.call_activity("load", input=clean)


def test_a_rewound_generator_history_reruns_only_the_failed_call_under_the_rewrite() -> None:
    h = rewinding.etl_failing_at_load()
    replay = rewinding.after_rewind(rewinding.rewritten(h), h)
    assert run(replay, etl).actions == [rewinding.schedule(3, "load", '"clean"')]
    replay.task_scheduled(3, "load", "clean").orchestrator_completed().commit()
    replay.new().orchestrator_started().task_completed(3, "loaded")
    assert output(run(replay, etl)) == "loaded"
