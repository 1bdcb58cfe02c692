"""Bounded activity calls in the replay core: timeouts raced against attempts, retries, heartbeats, cancellation."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from durabletask import task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.activity_control import CONTROL_EVENT, CONTROL_TAG, AttemptSettings, control_event
from durabletask._replay.executor import ExecutionResults

from .history import T0, History, failed_with, failure, kinds, output, run

MIN = timedelta(minutes=1)


def record(history: History, result: ExecutionResults) -> History:
    """Add the scheduling events of ``result``'s actions to ``history`` (as the backend would)."""
    for action in result.actions:
        kind = action.WhichOneof("orchestratorActionType")
        if kind == "scheduleTask":
            scheduled = pb.TaskScheduledEvent(name=action.scheduleTask.name, input=action.scheduleTask.input)
            scheduled.tags.update(action.scheduleTask.tags)
            history._add(action.id, taskScheduled=scheduled)
        elif kind == "createTimer":
            history.timer_created(action.id, action.createTimer.fireAt.ToDatetime())
        elif kind == "sendEntityMessage":
            history.entity_message(action.id, action.sendEntityMessage)
    return history


def report(history: History, seq: int, kind: str, details: Any = None, *, at: datetime | None = None) -> History:
    """An attempt's start or heartbeat reaching the orchestration (a new turn at ``at``)."""
    history.orchestrator_started(at)
    encoded = None if details is None else json.dumps(details)
    payload = control_event(seq, kind, encoded)
    return history._add(eventRaised=pb.EventRaisedEvent(name=CONTROL_EVENT, input={"value": payload}))


def scheduled(result: ExecutionResults) -> list[tuple[int, str, AttemptSettings]]:
    return [
        (a.id, a.scheduleTask.name, AttemptSettings.from_tag(a.scheduleTask.tags[CONTROL_TAG]))
        for a in result.actions
        if a.HasField("scheduleTask")
    ]


def timers(result: ExecutionResults) -> list[tuple[int, datetime]]:
    return [(a.id, a.createTimer.fireAt.ToDatetime()) for a in result.actions if a.HasField("createTimer")]


def stop_requests(result: ExecutionResults) -> list[tuple[str, str, str]]:
    return [
        (
            a.sendEntityMessage.entityOperationSignaled.targetInstanceId.value,
            a.sendEntityMessage.entityOperationSignaled.operation,
            a.sendEntityMessage.entityOperationSignaled.input.value,
        )
        for a in result.actions
        if a.HasField("sendEntityMessage")
    ]


def catching(**options: Any) -> Any:
    """An orchestrator making one bounded call and returning its result, or what its error says."""

    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            return (yield ctx.call_activity("extract", input={"pages": 9}, **options))
        except task.ActivityTimeoutError as error:
            return {"timeout": error.timeout_type, "details": error.last_heartbeat_details}
        except task.TaskCancelledError:
            return "cancelled"
        except task.TaskFailedError as error:
            return {"failed": error.details.message}

    orch.__name__ = "orch"
    return orch


def test_an_attempt_carries_its_settings_in_one_tag_and_the_deadline_is_a_durable_timer() -> None:
    orch = catching(start_to_close_timeout=5 * MIN, schedule_to_close_timeout=60 * MIN,
                    heartbeat_timeout=timedelta(seconds=30))
    first = run(History().started("orch", execution_id="e1").new(), orch)
    ((seq, name, settings),) = scheduled(first)
    assert (seq, name) == (1, "extract")
    assert settings == AttemptSettings(attempt=1, entity_key="abc123#e1", throttle_seconds=24.0, poll_seconds=1.0,
                                       reports_start=True, details=None,
                                       timeouts=(("start_to_close", 300.0), ("schedule_to_close", 3600.0),
                                                 ("heartbeat", 30.0)), decides_at_turn_end=True)
    assert timers(first) == [(2, T0 + 60 * MIN)]


def test_start_to_close_counts_from_the_reported_start_and_a_late_result_changes_nothing() -> None:
    orch = catching(start_to_close_timeout=5 * MIN)
    history = History().started("orch")
    record(history, run(history, orch))
    started_at = T0 + timedelta(seconds=3)
    report(history.new(), 1, "start", at=started_at)
    armed = run(history, orch)
    assert timers(armed) == [(2, started_at + 5 * MIN)]
    record(history.commit(), armed)

    fire = started_at + 5 * MIN
    history.new().orchestrator_started(fire).timer_fired(2, fire)
    timed_out = run(history, orch)
    assert stop_requests(timed_out) == [("@dtscale.activities@abc123", "cancel", "1")]
    assert output(timed_out) == {"timeout": "start_to_close", "details": None}

    # The attempt's result arrives after the timeout: a replay of everything at once decides the same.
    record(history.commit(), timed_out)
    history.orchestrator_started().task_completed(1, "late")
    whole = History()
    whole.new_events = history.all
    assert output(run(whole, orch)) == {"timeout": "start_to_close", "details": None}


def test_a_result_before_the_timeout_cancels_the_timers() -> None:
    orch = catching(start_to_close_timeout=5 * MIN, schedule_to_close_timeout=60 * MIN)
    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 1, "start")
    record(history, run(history, orch))
    history.new().orchestrator_started().task_completed(1, {"pages": 9})
    done = run(history, orch)
    assert kinds(done) == ["completeOrchestration"]
    assert output(done) == {"pages": 9}


def test_a_timed_out_attempt_is_retried_under_a_new_id_with_the_last_heartbeat_details() -> None:
    retry = task.RetryPolicy(first_retry_interval=timedelta(seconds=10), max_number_of_attempts=3)
    orch = catching(start_to_close_timeout=5 * MIN, retry_policy=retry)
    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 1, "start", at=T0)
    record(history, run(history, orch))  # start_to_close timer: ID 2
    report(history, 1, "beat", {"page": 4}, at=T0 + MIN)
    fire = T0 + 5 * MIN
    history.new().orchestrator_started(fire).timer_fired(2, fire)
    timed_out = run(history, orch)
    assert stop_requests(timed_out) == [("@dtscale.activities@abc123", "cancel", "1")]
    assert timers(timed_out) == [(4, fire + timedelta(seconds=10))]
    record(history.commit(), timed_out)

    again = fire + timedelta(seconds=10)
    history.new().orchestrator_started(again).timer_fired(4, again)
    second = run(history, orch)
    ((seq, _, settings),) = scheduled(second)
    assert seq == 5 and settings.attempt == 2
    assert json.loads(settings.details or "null") == {"page": 4}
    record(history.commit(), second)

    # The first attempt's result, late, is ignored; the second attempt's is the call's.
    history.new().orchestrator_started().task_completed(1, "stale").task_completed(5, "fresh")
    assert output(run(history, orch)) == "fresh"


def test_heartbeats_keep_an_attempt_alive_and_silence_times_it_out_with_the_last_details() -> None:
    orch = catching(heartbeat_timeout=timedelta(seconds=30))
    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 1, "start", at=T0)
    first = run(history, orch)
    assert timers(first) == [(2, T0 + timedelta(seconds=30))]
    record(history, first)
    report(history, 1, "beat", 1, at=T0 + timedelta(seconds=20))
    assert kinds(run(history, orch)) == []
    # The timer fires; a heartbeat came 10 s before it, so the watch moves to that heartbeat plus 30 s.
    fire = T0 + timedelta(seconds=30)
    history.orchestrator_started(fire).timer_fired(2, fire)
    moved = run(history, orch)
    assert timers(moved) == [(3, T0 + timedelta(seconds=50))]
    record(history, moved)
    report(history, 1, "beat", 2, at=T0 + timedelta(seconds=45))
    fire = T0 + timedelta(seconds=50)
    history.orchestrator_started(fire).timer_fired(3, fire)
    record(history, run(history, orch))
    fire = T0 + timedelta(seconds=75)
    history.new().orchestrator_started(fire).timer_fired(4, fire)
    assert output(run(history, orch)) == {"timeout": "heartbeat", "details": 2}


def test_schedule_to_start_fires_when_no_worker_starts_the_attempt() -> None:
    orch = catching(schedule_to_start_timeout=MIN)
    history = History().started("orch")
    first = run(history, orch)
    assert timers(first) == [(2, T0 + MIN)]
    record(history, first)
    history.new().orchestrator_started(T0 + MIN).timer_fired(2, T0 + MIN)
    done = run(history, orch)
    assert output(done) == {"timeout": "schedule_to_start", "details": None}


def test_schedule_to_close_ends_all_attempts_even_between_retries() -> None:
    retry = task.RetryPolicy(first_retry_interval=timedelta(seconds=30), max_number_of_attempts=10)
    orch = catching(schedule_to_close_timeout=2 * MIN, retry_policy=retry)
    history = History().started("orch")
    record(history, run(history, orch))  # attempt 1, deadline timer 2
    history.orchestrator_started(T0 + MIN).task_failed(1)
    retrying = run(history, orch)
    assert timers(retrying) == [(3, T0 + MIN + timedelta(seconds=30))]
    record(history, retrying)
    fire = T0 + MIN + timedelta(seconds=30)
    history.orchestrator_started(fire).timer_fired(3, fire)
    record(history, run(history, orch))  # attempt 2 under ID 4
    history.new().orchestrator_started(T0 + 2 * MIN).timer_fired(2, T0 + 2 * MIN)
    done = run(history, orch)
    assert stop_requests(done) == [("@dtscale.activities@abc123", "cancel", "4")]
    assert output(done) == {"timeout": "schedule_to_close", "details": None}


def test_a_retry_that_could_not_start_before_the_deadline_ends_the_call_with_the_deadline_at_once() -> None:
    retry = task.RetryPolicy(first_retry_interval=timedelta(minutes=5), max_number_of_attempts=10)

    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        try:
            yield ctx.call_activity("extract", schedule_to_close_timeout=2 * MIN, retry_policy=retry)
        except task.ActivityTimeoutError as error:
            return [error.timeout_type, error.details.inner_failure and error.details.inner_failure.message]

    history = History().started("orch")
    record(history, run(history, orch))
    history.new().orchestrator_started(T0 + MIN).task_failed(1, failure("flaky"))
    assert output(run(history, orch)) == ["schedule_to_close", "flaky"]


def test_without_a_retry_policy_a_failed_attempt_fails_the_call_with_its_own_error() -> None:
    orch = catching(start_to_close_timeout=2 * MIN)
    history = History().started("orch")
    record(history, run(history, orch))
    history.new().orchestrator_started(T0 + MIN).task_failed(1, failure("flaky"))
    assert output(run(history, orch)) == {"failed": "flaky"}


def racing(how: task.ActivityCancellation) -> Any:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        t = ctx.call_activity("extract", heartbeat_timeout=MIN, cancellation=how)
        winner = yield task.when_any([t, ctx.wait_for_external_event("cancel")])
        if winner is not t:
            assert t.cancel() is True
        try:
            return (yield t)
        except task.TaskCancelledError:
            return "cancelled"

    orch.__name__ = "orch"
    return orch


def cancelled_history(how: task.ActivityCancellation) -> tuple[History, ExecutionResults]:
    history = History().started("orch")
    record(history, run(history, racing(how)))
    report(history, 1, "start")
    record(history, run(history, racing(how)))  # heartbeat timer 2
    history.new().orchestrator_started().event_raised("cancel")
    return history, run(history, racing(how))


def test_try_cancel_asks_the_activity_to_stop_and_raises_at_once() -> None:
    _, result = cancelled_history(task.ActivityCancellation.TRY_CANCEL)
    assert stop_requests(result) == [("@dtscale.activities@abc123", "cancel", "1")]
    assert output(result) == "cancelled"


def test_abandon_does_not_tell_the_activity() -> None:
    _, result = cancelled_history(task.ActivityCancellation.ABANDON)
    # No stop is asked for the call; the execution ending in this same turn is announced (every execution that
    # ends while an attempt of it may run does so, whatever the cancellation type).
    assert stop_requests(result) == [("@dtscale.activities@abc123", "end", "")]
    assert output(result) == "cancelled"


def test_wait_cancellation_completed_raises_only_once_the_activity_has_ended() -> None:
    how = task.ActivityCancellation.WAIT_CANCELLATION_COMPLETED
    history, result = cancelled_history(how)
    assert stop_requests(result) == [("@dtscale.activities@abc123", "cancel", "1")]
    assert "completeOrchestration" not in kinds(result)
    record(history.commit(), result)
    history.new().orchestrator_started().task_failed(1, failure("stopped", "durabletask.task.ActivityCancelledError"))
    assert output(run(history, racing(how))) == "cancelled"


def test_cancel_on_a_finished_call_returns_false() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        t = ctx.call_activity("extract", start_to_close_timeout=MIN)
        value = yield t
        return [value, t.cancel(), t.is_cancelled]

    history = History().started("orch")
    record(history, run(history, orch))
    history.new().orchestrator_started().task_completed(1, 7)
    assert output(run(history, orch)) == [7, False, False]


def test_a_call_without_the_new_keywords_is_scheduled_exactly_as_before() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_activity("extract", input=1))

    (action,) = run(History().started("orch").new(), orch).actions
    expected = pb.ScheduleTaskAction(name="extract", input={"value": "1"})
    assert action == pb.OrchestratorAction(id=1, scheduleTask=expected)


def test_reports_for_unknown_attempts_are_ignored_and_user_events_still_arrive() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        t = ctx.call_activity("extract", start_to_close_timeout=MIN)
        got = yield ctx.wait_for_external_event("go")
        return [got, (yield t)]

    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 99, "beat", 1)
    history.orchestrator_started().event_raised("go", "yes").task_completed(1, 3)
    assert output(run(history.new(), orch)) == ["yes", 3]


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"start_to_close_timeout": timedelta(0)}, ValueError, "start_to_close_timeout must be greater than zero"),
        ({"heartbeat_timeout": timedelta(seconds=-1)}, ValueError, "heartbeat_timeout must be greater than zero"),
        ({"schedule_to_start_timeout": 5}, TypeError, "schedule_to_start_timeout must be a datetime.timedelta"),
        (
            {"start_to_close_timeout": 5 * MIN, "schedule_to_close_timeout": MIN},
            ValueError,
            "schedule_to_close_timeout (0:01:00) must not be shorter than start_to_close_timeout (0:05:00)",
        ),
        ({"cancellation": "abandon"}, TypeError, "cancellation must be a task.ActivityCancellation"),
        ({"start_to_close_timeout": MIN, "tags": {CONTROL_TAG: "x"}}, ValueError, "is reserved"),
    ],
)
def test_bad_options_fail_the_orchestration_with_a_message_naming_the_field(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_activity("extract", **options))

    details = failed_with(run(History().started("orch").new(), orch))
    assert details.errorType.endswith(error.__name__)
    assert words in details.errorMessage


def test_an_attempt_handed_out_again_after_heartbeats_is_replaced_by_one_resuming_from_them() -> None:
    orch = catching(heartbeat_timeout=MIN)
    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 1, "start")
    record(history, run(history, orch))  # heartbeat timer 2
    report(history, 1, "beat", {"page": 7})
    report(history.new(), 1, "start")  # its worker died; the backend handed the attempt out again
    replaced = run(history, orch)
    assert stop_requests(replaced) == [("@dtscale.activities@abc123", "cancel", "1")]
    ((seq, _, settings),) = scheduled(replaced)
    assert json.loads(settings.details or "null") == {"page": 7}
    record(history.commit(), replaced)
    history.new().orchestrator_started().task_completed(1, "stale").task_completed(seq, "done")
    assert output(run(history, orch)) == "done"


def test_an_attempt_handed_out_again_without_newer_details_keeps_running() -> None:
    orch = catching(heartbeat_timeout=MIN)
    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 1, "start")
    record(history, run(history, orch))
    report(history.new(), 1, "start")
    assert kinds(run(history, orch)) == []


def _ending(how: str) -> Any:
    """An orchestrator that starts a bounded call and ends, on a user event, without waiting for it."""

    def orch(ctx: task.OrchestrationContext, generation: int) -> Any:
        ctx.call_activity("extract", heartbeat_timeout=MIN)
        yield ctx.wait_for_external_event("go")
        if how == "complete":
            return "done"
        if how == "fail":
            raise ValueError("gave up")
        ctx.continue_as_new(generation + 1)
        return None

    orch.__name__ = "orch"
    return orch


@pytest.mark.parametrize("how", ["complete", "fail", "continue"])
def test_an_execution_that_ends_while_an_attempt_runs_tells_its_control_entity_in_that_turn(how: str) -> None:
    history = History().started("orch", 0, execution_id="e1")
    record(history, run(history, _ending(how)))
    report(history, 1, "start")
    record(history, run(history, _ending(how)))
    history.new().orchestrator_started().event_raised("go")
    result = run(history, _ending(how))
    # The workers' batched checks read the entity: its "end" stops every attempt of the execution.
    assert stop_requests(result) == [("@dtscale.activities@abc123#e1", "end", "")]
    assert kinds(result)[-2:] == ["sendEntityMessage", "completeOrchestration"]


def test_an_execution_whose_calls_have_all_ended_sends_nothing_more_when_it_ends() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        return (yield ctx.call_activity("extract", heartbeat_timeout=MIN))

    history = History().started("orch")
    record(history, run(history, orch))
    history.new().orchestrator_started().task_completed(1, 7)
    result = run(history, orch)
    assert kinds(result) == ["completeOrchestration"]
    assert output(result) == 7


def _numbered_beat(history: History, seq: int, page: int, run_id: str, number: int, at: datetime) -> History:
    history.orchestrator_started(at)
    payload = control_event(seq, "beat", json.dumps(page), run=run_id, number=number)
    return history._add(eventRaised=pb.EventRaisedEvent(name=CONTROL_EVENT, input={"value": payload}))


def test_a_heartbeat_recorded_twice_is_counted_once_and_a_new_run_counts_afresh() -> None:
    orch = catching(heartbeat_timeout=timedelta(seconds=30))
    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 1, "start", at=T0)
    record(history, run(history, orch))  # heartbeat watch: timer 2 at T0 + 30 s
    _numbered_beat(history, 1, 5, "r1", 1, T0 + timedelta(seconds=10))
    # The same heartbeat again (its first send's answer was lost): it neither keeps the attempt alive longer...
    _numbered_beat(history, 1, 5, "r1", 1, T0 + timedelta(seconds=25))
    fire = T0 + timedelta(seconds=30)
    history.orchestrator_started(fire).timer_fired(2, fire)
    moved = run(history, orch)
    assert timers(moved) == [(3, T0 + timedelta(seconds=40))]  # ...the watch follows the first recording
    record(history, moved)
    # Another run of the same attempt (handed out again) numbers from 1: its heartbeats count.
    _numbered_beat(history, 1, 6, "r2", 1, T0 + timedelta(seconds=35))
    fire = T0 + timedelta(seconds=40)
    history.orchestrator_started(fire).timer_fired(3, fire)
    assert timers(run(history, orch)) == [(4, T0 + timedelta(seconds=65))]


def _watch_fires_before_a_heartbeat_in_the_same_turn(*, legacy: bool) -> ExecutionResults:
    """The heartbeat watch (30 s) fires at T0 + 30 s; a heartbeat recorded at T0 + 29 s reaches the orchestration
    in the same turn, after the timer (the backend queued the timer first)."""
    orch = catching(heartbeat_timeout=timedelta(seconds=30))
    history = History().started("orch")
    record(history, run(history, orch))
    if legacy:  # an attempt recorded before timeouts were decided at the end of the turn
        tags = history.old[-1].taskScheduled.tags
        tags[CONTROL_TAG] = json.dumps({k: v for k, v in json.loads(tags[CONTROL_TAG]).items() if k != "turn"})
    report(history, 1, "start", at=T0)
    record(history, run(history, orch))  # the watch: timer 2 at T0 + 30 s
    fire = T0 + timedelta(seconds=30)
    history.new().orchestrator_started(fire + timedelta(seconds=1)).timer_fired(2, fire)
    beat = pb.EventRaisedEvent(name=CONTROL_EVENT, input={"value": control_event(1, "beat", "29", run="r", number=1)})
    history._add(eventRaised=beat)
    history.new_events[-1].timestamp.FromDatetime(T0 + timedelta(seconds=29))
    return run(history, orch)


def test_a_heartbeat_recorded_before_the_watch_fired_counts_though_delivered_after_it_in_the_same_turn() -> None:
    result = _watch_fires_before_a_heartbeat_in_the_same_turn(legacy=False)
    assert stop_requests(result) == []
    assert timers(result) == [(3, T0 + timedelta(seconds=59))]  # the watch moves to that heartbeat plus 30 s


def test_an_attempt_recorded_before_that_rule_replays_the_decision_it_was_run_with() -> None:
    result = _watch_fires_before_a_heartbeat_in_the_same_turn(legacy=True)
    assert stop_requests(result) == [("@dtscale.activities@abc123", "cancel", "1")]
    assert output(result) == {"timeout": "heartbeat", "details": None}


def test_a_result_recorded_before_the_deadline_counts_though_delivered_after_it_in_the_same_turn() -> None:
    orch = catching(start_to_close_timeout=MIN)
    history = History().started("orch")
    record(history, run(history, orch))
    report(history, 1, "start", at=T0)
    record(history, run(history, orch))  # start_to_close: timer 2 at T0 + 1 min
    history.new().orchestrator_started(T0 + MIN + timedelta(seconds=2)).timer_fired(2, T0 + MIN).task_completed(1, 9)
    first = run(history, orch)
    assert output(first) == 9
    # Replayed with the actions it recorded, the same turn decides the same.
    record(history.commit(), first)
    history.new().orchestrator_started().event_raised("unrelated")
    assert output(run(history, orch)) == 9


def test_a_session_that_never_sees_the_recorded_scheduling_decides_at_the_end_of_the_turn_too() -> None:
    from durabletask._replay.executor import OrchestrationExecutor

    from .history import registry

    orch = catching(heartbeat_timeout=timedelta(seconds=30))
    executor = OrchestrationExecutor(registry(orch))
    first = executor.execute("abc123", [], History().new().started("orch").new_events)
    assert kinds(first) == ["scheduleTask"]
    # Resumed with new events only: the attempt's taskScheduled and the watch's timerCreated are never replayed.
    started = History().new().orchestrator_started(T0)
    started._add(eventRaised=pb.EventRaisedEvent(name=CONTROL_EVENT, input={"value": control_event(1, "start")}))
    assert timers(executor.resume(started.new_events)) == [(2, T0 + timedelta(seconds=30))]
    late = History().new().orchestrator_started(T0 + timedelta(seconds=31)).timer_fired(2, T0 + timedelta(seconds=30))
    beat = pb.EventRaisedEvent(name=CONTROL_EVENT, input={"value": control_event(1, "beat", "29", run="r", number=1)})
    late._add(eventRaised=beat)
    late.new_events[-1].timestamp.FromDatetime(T0 + timedelta(seconds=29))
    result = executor.resume(late.new_events)
    assert stop_requests(result) == []
    assert timers(result) == [(3, T0 + timedelta(seconds=59))]
