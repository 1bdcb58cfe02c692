"""Bounded activities in a task hub shared with Microsoft's SDK: both SDKs' work goes on side by side.

Our worker (in this process) runs orchestrations whose activities heartbeat, time out and are cancelled; a worker
of Microsoft's SDK (a subprocess) runs its own orchestrations in the same task hub, some of whose activities our
worker serves, and serves activities that our bounded calls schedule. Both workers use work-item filters, as
docs/activities.md asks of a mixed task hub.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from durabletask import task

from . import harness, runners
from . import scenarios as sc
from .conftest import ROOT, our_env, peer_env

pytestmark = pytest.mark.interop

#: How long the heartbeating activity keeps going if it is never told to stop (the test then fails on its result).
RUN_LIMIT = 60.0


def extraction(ctx: task.ActivityContext, directory: str) -> str:
    """Heartbeats its page until asked to stop; leaves a file saying it started and one saying it stopped."""
    page = 0
    Path(directory, "started").write_text("1", encoding="utf-8")
    deadline = time.monotonic() + RUN_LIMIT
    while time.monotonic() < deadline:
        try:
            ctx.heartbeat(page)
        except task.ActivityCancelledError:
            Path(directory, "stopped").write_text(str(page), encoding="utf-8")
            raise
        page += 1
        time.sleep(0.02)
    return "never asked to stop"


def cancelled_extraction(ctx: task.OrchestrationContext, directory: str) -> Generator[Any, Any, Any]:
    t = ctx.call_activity(
        extraction,
        input=directory,
        heartbeat_timeout=timedelta(seconds=5),
        cancellation=task.ActivityCancellation.WAIT_CANCELLATION_COMPLETED,
    )
    stop = ctx.wait_for_external_event("stop")
    winner = yield task.when_any([t, stop])
    if winner is stop:
        t.cancel()
    try:
        return (yield t)
    except task.TaskCancelledError:
        return "cancelled"


def bounded_official_calls(ctx: task.OrchestrationContext, _: Any) -> Generator[Any, Any, Any]:
    """Bounded calls to activities that only Microsoft's worker serves: one in time, one past its deadline."""
    quick = yield ctx.call_activity("hello", input="bounded", schedule_to_close_timeout=timedelta(seconds=60))
    try:
        yield ctx.call_activity("nap", input=8, schedule_to_close_timeout=timedelta(seconds=2))
        late: Any = "no timeout"
    except task.ActivityTimeoutError as error:
        late = error.timeout_type
    return [quick, late]


def test_bounded_activities_and_official_orchestrations_share_a_task_hub(
    peer_py: Path, scheduler: tuple[str, str]
) -> None:
    address, taskhub = scheduler
    with harness.open_harness("dts", address, taskhub, our_env(), str(ROOT)) as h:
        c = h.client()
        h.worker(
            orchestrators=(cancelled_extraction, bounded_official_calls),
            activities=(extraction, sc.double),
            configure=harness.filtered,
        )
        h.spawn("official-mix", python=str(peer_py), env=peer_env(), cwd="/")
        directory = Path(h.workdir)
        ours = c.schedule_new_orchestration(cancelled_extraction, input=str(directory), instance_id=h.new_id("x"))
        assert runners.wait_until(lambda: (directory / "started").exists(), True), "the extraction never started"
        official = {
            "chaining": c.schedule_new_orchestration("chaining", instance_id=h.new_id("chain")),
            "fan_out_fan_in": c.schedule_new_orchestration("fan_out_fan_in", input=5, instance_id=h.new_id("fan")),
            "approval": c.schedule_new_orchestration("approval", instance_id=h.new_id("approve")),
        }
        bounded = c.schedule_new_orchestration(bounded_official_calls, instance_id=h.new_id("bounded"))
        c.raise_orchestration_event(official["approval"], "approve", data="yes")
        outcomes = {name: runners.finish(c, instance_id) for name, instance_id in official.items()}
        outcomes["bounded"] = runners.finish(c, bounded)
        c.raise_orchestration_event(ours, "stop")
        outcomes["ours"] = runners.finish(c, ours)
        # WAIT_CANCELLATION_COMPLETED: the orchestration went on only once the activity had seen the request.
        stopped = (directory / "stopped").exists()

    assert outcomes == {
        "chaining": {"status": "COMPLETED", "output": ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]},
        "fan_out_fan_in": {"status": "COMPLETED", "output": 20},
        "approval": {"status": "COMPLETED", "output": "approved:yes"},
        "bounded": {"status": "COMPLETED", "output": ["Hello bounded!", "schedule_to_close"]},
        "ours": {"status": "COMPLETED", "output": "cancelled"},
    }
    assert stopped
