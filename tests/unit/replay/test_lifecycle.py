"""Custom status, continue-as-new, suspend/resume, termination, deterministic UUIDs and replay-aware logging."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta
from typing import Any

import pytest

from durabletask import task
from durabletask._errors import PayloadTooLargeError
from durabletask._proto import orchestrator_service_pb2 as pb

from .history import T0, History, completion, failed_with, kinds, output, run


def test_custom_status_is_encoded_once_and_reported() -> None:
    def status(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.set_custom_status({"step": 1})
        yield ctx.call_activity("a")
        ctx.set_custom_status({"step": 2})

    assert run(History().new().started("status"), status).encoded_custom_status == '{"step": 1}'
    history = History().started("status").task_scheduled(1, "a").new().orchestrator_started().task_completed(1)
    assert run(history, status).encoded_custom_status == '{"step": 2}'


def test_oversized_custom_status_raises_at_the_call_site() -> None:
    def status(ctx: task.OrchestrationContext, _: Any) -> Any:
        with pytest.raises(PayloadTooLargeError):
            ctx.set_custom_status("z" * (1024 * 1024 + 1))
        return "ok"

    assert output(run(History().new().started("status"), status)) == "ok"


def counter(ctx: task.OrchestrationContext, n: int) -> Any:
    yield ctx.create_timer(timedelta(seconds=1))
    ctx.continue_as_new(n + 1, save_events=n % 2 == 0, new_version="v2" if n > 5 else None)
    return "ignored"


def test_continue_as_new_sends_the_new_input_and_nothing_else() -> None:
    history = (History().started("counter", 7).timer_created(1, T0 + timedelta(seconds=1))
               .new().orchestrator_started().timer_fired(1, T0 + timedelta(seconds=1)).event_raised("late", 1))
    done = completion(run(history, counter))
    assert done.orchestrationStatus == pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW
    assert done.result.value == "8"
    assert done.newVersion.value == "v2"
    assert list(done.carryoverEvents) == []


def test_continue_as_new_with_save_events_carries_unconsumed_events_in_order() -> None:
    history = (History().started("counter", 2).timer_created(1, T0 + timedelta(seconds=1))
               .new().orchestrator_started().event_raised("B", 1).event_raised("a", 2)
               .timer_fired(1, T0 + timedelta(seconds=1)).event_raised("b", 3))
    done = completion(run(history, counter))
    carried = [(e.eventRaised.name, e.eventRaised.input.value) for e in done.carryoverEvents]
    assert carried == [("B", "1"), ("a", "2"), ("b", "3")]
    assert not done.HasField("newVersion")


def test_events_consumed_before_continue_as_new_are_not_carried_over() -> None:
    def loop(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.wait_for_external_event("x")
        ctx.continue_as_new(None, save_events=True)

    history = History().started("loop").new().orchestrator_started().event_raised("x", 1).event_raised("x", 2)
    done = completion(run(history, loop))
    assert [e.eventRaised.input.value for e in done.carryoverEvents] == ["2"]


def chain(ctx: task.OrchestrationContext, _: Any) -> Any:
    a = yield ctx.call_activity("a")
    b = yield ctx.call_activity("b")
    return [a, b]


def test_events_while_suspended_wait_until_resumed() -> None:
    history = (History().started("chain").task_scheduled(1, "a")
               .new().orchestrator_started().suspended().task_completed(1, 1))
    assert run(history, chain).actions == []
    history.resumed()
    assert [a.scheduleTask.name for a in run(history, chain).actions] == ["b"]


def test_termination_applies_even_while_suspended() -> None:
    history = (History().started("chain").task_scheduled(1, "a")
               .new().orchestrator_started().suspended().task_completed(1, 1).terminated({"why": "ops"}))
    done = completion(run(history, chain))
    assert done.orchestrationStatus == pb.ORCHESTRATION_STATUS_TERMINATED
    assert json.loads(done.result.value) == {"why": "ops"}
    assert kinds(run(history, chain)) == ["completeOrchestration"]


def test_new_uuid_is_deterministic_and_name_based() -> None:
    def ids(ctx: task.OrchestrationContext, _: Any) -> Any:
        return [ctx.new_uuid(), ctx.new_uuid()]

    first = output(run(History().new().started("ids"), ids))
    again = output(run(History().new().started("ids"), ids))
    assert first == again
    assert first[0] != first[1]
    assert uuid.UUID(first[0]).version == 5
    other = output(run(History("someone-else").new().started("ids"), ids))
    assert other[0] != first[0]


def test_replay_safe_logger_is_silent_during_replay(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("tests.replay.safe")
    flags: list[bool] = []

    def noisy(ctx: task.OrchestrationContext, _: Any) -> Any:
        safe = ctx.create_replay_safe_logger(log)
        for step in ("a", "b"):
            flags.append(ctx.is_replaying)
            safe.warning("calling %s", step)
            yield ctx.call_activity(step)

    history = History().started("noisy").task_scheduled(1, "a").new().orchestrator_started().task_completed(1)
    with caplog.at_level(logging.INFO, logger="tests.replay.safe"):
        run(history, noisy)
    assert flags == [True, False]
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == ["calling b"]


def test_orchestration_input_and_version_are_visible() -> None:
    def info(ctx: task.OrchestrationContext, data: Any) -> Any:
        return [data, ctx.version, ctx.instance_id, ctx.current_utc_datetime.isoformat()]

    got = output(run(History("iid").new().started("info", {"x": 1}, version="1.2", at=T0), info))
    assert got == [{"x": 1}, "1.2", "iid", T0.isoformat()]


def test_missing_input_reaches_the_orchestrator_as_none() -> None:
    def info(ctx: task.OrchestrationContext, data: Any) -> Any:
        return data is None

    assert output(run(History().new().started("info"), info)) is True


def test_malformed_input_fails_the_orchestration() -> None:
    def info(ctx: task.OrchestrationContext, data: Any) -> Any:
        return data

    assert "not valid JSON" in failed_with(run(History().new().started("info", raw_input="{oops"), info)).errorMessage
