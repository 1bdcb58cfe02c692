"""Every way a recorded scheduling event can disagree with the current code fails with NonDeterminismError."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from durabletask import task

from .history import T0, History, failed_with, run


def one_call(kind: str, name: str) -> Callable[..., Any]:
    """An orchestrator whose single durable call (ID 1) is ``kind`` with ``name``."""

    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        if kind == "activity":
            yield ctx.call_activity(name)
        elif kind == "sub":
            yield ctx.call_sub_orchestrator(name, instance_id="child")
        elif kind == "timer":
            yield ctx.create_timer(timedelta(minutes=1))
        elif kind == "send":
            ctx.send_event("target", name)
            yield ctx.create_timer(timedelta(minutes=1))
        elif kind == "none":
            return "nothing"

    orch.__name__ = "orch"
    return orch


def record(history: History, kind: str, name: str) -> History:
    if kind == "activity":
        return history.task_scheduled(1, name)
    if kind == "sub":
        return history.sub_created(1, name)
    if kind == "timer":
        return history.timer_created(1, T0 + timedelta(minutes=1))
    return history.event_sent(1, "target", name)


RECORDED = {
    "activity": "call_activity('old')",
    "sub": "call_sub_orchestrator('old')",
    "timer": "create_timer()",
    "send": "send_event('target', 'old')",
}
CURRENT = {
    "activity": "calls call_activity('{n}')",
    "sub": "calls call_sub_orchestrator('{n}')",
    "timer": "calls create_timer()",
    "send": "calls send_event('target', '{n}')",
    "none": "makes no call",
}
KINDS = ["activity", "sub", "timer", "send"]


def replay(recorded_kind: str, current_kind: str, current_name: str) -> str:
    history = record(History().started("orch"), recorded_kind, "old").new().orchestrator_started()
    details = failed_with(run(history, one_call(current_kind, current_name)))
    assert details.errorType == "durabletask.task.NonDeterminismError"
    return details.errorMessage


@pytest.mark.parametrize("kind", ["activity", "sub", "send"])
def test_wrong_name(kind: str) -> None:
    message = replay(kind, kind, "new")
    assert f"records {RECORDED[kind]} with ID 1" in message
    assert CURRENT[kind].format(n="new") in message


@pytest.mark.parametrize(("recorded", "current"), list(itertools.permutations(KINDS, 2)))
def test_wrong_kind(recorded: str, current: str) -> None:
    message = replay(recorded, current, "old")
    assert f"records {RECORDED[recorded]} with ID 1" in message
    assert CURRENT[current].format(n="old") in message


@pytest.mark.parametrize("kind", KINDS)
def test_missing_action(kind: str) -> None:
    message = replay(kind, "none", "")
    assert f"records {RECORDED[kind]} with ID 1" in message
    assert "makes no call with that ID" in message


def test_event_sent_to_another_instance_is_a_mismatch() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.send_event("elsewhere", "old")
        yield ctx.create_timer(timedelta(minutes=1))

    history = History().started("orch").event_sent(1, "target", "old").new().orchestrator_started()
    details = failed_with(run(history, orch))
    assert "send_event('elsewhere', 'old')" in details.errorMessage


def test_event_sent_name_comparison_ignores_case() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        ctx.send_event("target", "Ping")
        yield ctx.create_timer(timedelta(minutes=1))

    history = (History().started("orch").event_sent(1, "target", "PING")
               .timer_created(2, T0 + timedelta(minutes=1)).new().orchestrator_started())
    assert run(history, orch).actions == []


def test_id_shift_from_an_inserted_call_is_detected() -> None:
    def orch(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.call_activity("inserted")
        yield ctx.call_activity("original")

    history = (History().started("orch").task_scheduled(1, "original")
               .new().orchestrator_started().task_completed(1, 1))
    message = failed_with(run(history, orch)).errorMessage
    assert "call_activity('original') with ID 1" in message
    assert "call_activity('inserted')" in message


def test_non_determinism_overrides_an_early_completion() -> None:
    # The current code returns before the second call the history recorded.
    def short(ctx: task.OrchestrationContext, _: Any) -> Any:
        yield ctx.call_activity("a")
        return "done early"

    short.__name__ = "orch"
    history = (History().started("orch").task_scheduled(1, "a").orchestrator_started().task_completed(1)
               .task_scheduled(2, "b").new().orchestrator_started().task_completed(2))
    details = failed_with(run(history, short))
    assert "call_activity('b') with ID 2" in details.errorMessage
