"""Timers (including long-timer splitting), the orchestration clock, and external events."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor

from .history import T0, History, failed_with, kinds, output, registry, run


def fire_times(actions: list[pb.OrchestratorAction]) -> list[datetime]:
    return [a.createTimer.fireAt.ToDatetime() for a in actions if a.HasField("createTimer")]


def nap(ctx: task.OrchestrationContext, minutes: int) -> Any:
    yield ctx.create_timer(timedelta(minutes=minutes))
    return ctx.current_utc_datetime.isoformat()


def test_timer_from_timedelta_is_relative_to_the_orchestration_clock() -> None:
    result = run(History().new().started("nap", 5, at=T0), nap)
    assert fire_times(result.actions) == [T0 + timedelta(minutes=5)]


def test_timer_from_an_aware_datetime_is_converted_to_utc() -> None:
    def at(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.create_timer(datetime(2025, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=1))))

    assert fire_times(run(History().new().started("at"), at).actions) == [datetime(2025, 1, 1, 13, 0)]


def test_fired_timer_resumes_and_the_clock_follows_orchestrator_started() -> None:
    later = T0 + timedelta(minutes=5, seconds=3)
    history = (History().started("nap", 5).timer_created(1, T0 + timedelta(minutes=5))
               .new().orchestrator_started(later).timer_fired(1, T0 + timedelta(minutes=5)))
    assert output(run(history, nap)) == later.isoformat()


def test_long_timers_are_split_by_the_maximum_interval() -> None:
    day = timedelta(days=1)
    final = T0 + timedelta(days=2, hours=12)
    first = run(History().new().started("nap", 60 * 60), nap, maximum_timer_interval=day)
    assert fire_times(first.actions) == [T0 + day]

    history = (History().started("nap", 60 * 60).timer_created(1, T0 + day)
               .orchestrator_started(T0 + day).timer_fired(1, T0 + day).timer_created(2, T0 + 2 * day)
               .new().orchestrator_started(T0 + 2 * day).timer_fired(2, T0 + 2 * day))
    second = run(history, nap, maximum_timer_interval=day)
    assert [a.id for a in second.actions] == [3]
    assert fire_times(second.actions) == [final]
    history.orchestrator_completed().timer_created(3, final).orchestrator_started(final).timer_fired(3, final)
    assert output(run(history, nap, maximum_timer_interval=day)) == final.isoformat()


def test_no_splitting_when_the_maximum_interval_is_none() -> None:
    result = run(History().new().started("nap", 60 * 24 * 30), nap, maximum_timer_interval=None)
    assert fire_times(result.actions) == [T0 + timedelta(days=30)]


def wait(ctx: task.OrchestrationContext, _: Any) -> Any:
    first = yield ctx.wait_for_external_event("Approval")
    second = yield ctx.wait_for_external_event("approval")
    return [first, second]


def test_events_are_matched_by_case_insensitive_name_in_arrival_order() -> None:
    history = (History().started("wait").new().orchestrator_started()
               .event_raised("APPROVAL", {"by": "ann"}).event_raised("approval", 2))
    assert output(run(history, wait)) == [{"by": "ann"}, 2]


def test_events_arriving_before_the_wait_are_buffered() -> None:
    def late(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.create_timer(timedelta(seconds=1))
        return (yield ctx.wait_for_external_event("go"))

    history = (History().started("late").timer_created(1, T0 + timedelta(seconds=1))
               .new().orchestrator_started().event_raised("other", 0).event_raised("Go", "now")
               .timer_fired(1, T0 + timedelta(seconds=1)))
    assert output(run(history, late)) == "now"


def timed(ctx: task.OrchestrationContext, _: Any) -> Any:
    try:
        return (yield ctx.wait_for_external_event("reply", timeout=timedelta(minutes=10)))
    except TimeoutError:
        return "timed out"


def test_wait_with_timeout_creates_a_racing_timer() -> None:
    result = run(History().new().started("timed"), timed)
    assert fire_times(result.actions) == [T0 + timedelta(minutes=10)]


def test_wait_with_timeout_raises_timeout_error_when_the_timer_wins() -> None:
    fire = T0 + timedelta(minutes=10)
    history = (History().started("timed").timer_created(1, fire)
               .new().orchestrator_started(fire).timer_fired(1, fire))
    assert output(run(history, timed)) == "timed out"


def test_wait_with_timeout_returns_the_event_when_it_wins_and_ignores_the_timer() -> None:
    fire = T0 + timedelta(minutes=10)
    history = (History().started("timed").timer_created(1, fire)
               .new().orchestrator_started().event_raised("reply", "yes").timer_fired(1, fire))
    assert output(run(history, timed)) == "yes"


def test_timeout_timer_is_not_created_when_the_event_is_already_buffered() -> None:
    history = History().new().started("timed").event_raised("reply", "early")
    assert output(run(history, timed)) == "early"


def test_event_data_is_rebuilt_as_data_type() -> None:
    from dataclasses import dataclass

    @dataclass
    class Vote:
        who: str
        yes: bool

    def vote(ctx: task.OrchestrationContext, _: Any) -> Any:
        ballot = yield ctx.wait_for_external_event("vote", data_type=Vote)
        return isinstance(ballot, Vote) and ballot.yes

    history = History().started("vote").new().orchestrator_started().event_raised("vote", {"who": "a", "yes": True})
    assert output(run(history, vote)) is True


def test_cancelling_a_wait_stops_it_from_consuming_events() -> None:
    def race(ctx: task.OrchestrationContext, _: Any) -> Any:
        waiting = ctx.wait_for_external_event("x")
        timer = ctx.create_timer(timedelta(seconds=5))
        winner = yield task.when_any([waiting, timer])
        if winner is timer:
            waiting.cancel()
        return (yield ctx.wait_for_external_event("x"))

    history = (History().started("race").timer_created(1, T0 + timedelta(seconds=5))
               .new().orchestrator_started().timer_fired(1, T0 + timedelta(seconds=5)).event_raised("x", "kept"))
    assert output(run(history, race)) == "kept"


def test_yielding_a_cancelled_task_raises_task_cancelled_error() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        timer = ctx.create_timer(timedelta(seconds=5))
        timer.cancel()
        yield timer

    details = failed_with(run(History().new().started("orch"), orch))
    assert details.errorType == "durabletask.task.TaskCancelledError"


def test_a_cancelled_timer_is_not_sent() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.create_timer(timedelta(seconds=5)).cancel()
        yield ctx.wait_for_external_event("x")

    assert kinds(run(History().new().started("orch"), orch)) == []


def clock_reader(ctx: task.OrchestrationContext, _: Any) -> Any:
    seen = [ctx.current_utc_datetime.isoformat()]
    for name in ("a", "b", "c"):
        yield ctx.call_activity(name)
        seen.append(ctx.current_utc_datetime.isoformat())
    return seen


def _clock_history(reader: bool = True) -> tuple[History, list[datetime]]:
    # Each turn's orchestratorStarted time is what the code must see after that turn's completion, also when
    # several turns are replayed before the code reads the time again.
    times = [T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=2, microseconds=5), T0 + timedelta(hours=3)]
    history = History().orchestrator_started(times[0]).started("clock_reader" if reader else "calls")
    for i, name in enumerate(("a", "b", "c"), start=1):
        history.task_scheduled(i, name).orchestrator_started(times[i]).task_completed(i, None)
    return history, times


def test_the_clock_is_the_latest_orchestrator_started_time_wherever_the_code_reads_it() -> None:
    history, times = _clock_history()
    assert output(run(history, clock_reader)) == [t.isoformat() for t in times]


def test_a_resumed_session_reads_the_time_of_its_new_orchestrator_started_event() -> None:
    history, times = _clock_history()
    executor = OrchestrationExecutor(registry(clock_reader))
    past, last = history.old[:-2], history.old[-2:]  # the last turn arrives as a continuation
    executor.execute(history.instance_id, past, [])
    assert output(executor.resume(last)) == [t.isoformat() for t in times]


def test_the_runtime_keeps_no_history_event_after_a_batch() -> None:
    # A kept history event would keep its whole work item (payloads and all) alive for a session's lifetime.
    def calls(ctx: task.OrchestrationContext, _: Any) -> Any:  # never asks the time
        for name in ("a", "b", "c"):
            yield ctx.call_activity(name)

    history, times = _clock_history(reader=False)
    executor = OrchestrationExecutor(registry(calls))
    executor.execute(history.instance_id, history.old[:-2], [])
    runtime = executor._runtime
    assert runtime is not None
    assert not [name for name, value in vars(runtime).items() if isinstance(value, pb.HistoryEvent)]
    assert runtime.current_utc_datetime == times[2]
