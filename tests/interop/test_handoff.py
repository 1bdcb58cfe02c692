"""One in-flight instance, two SDKs: a worker of one SDK starts it, a worker of the other replays and finishes it.

This is what a rolling upgrade between the SDKs does, so the second SDK must accept the history the first wrote.
Runs against our emulator, or the external backend when one is given; the official SDK's worker lives in a
subprocess, ours in this process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from . import harness, runners
from . import scenarios as sc
from .conftest import ROOT, our_env, peer_env

pytestmark = pytest.mark.interop

EXPECTED = {"status": "COMPLETED", "output": ["Hello first!", "Hello second!"]}


async def handoff_rewritten(ctx: Any, _: Any) -> Any:
    """``scenarios.handoff`` rewritten with ``async def``: the same calls, awaited instead of yielded."""
    first = await ctx.call_activity(sc.hello, input="first")
    ctx.set_custom_status("waiting")
    second = await ctx.wait_for_external_event("go")
    return [first, await ctx.call_activity(sc.hello, input=second)]


def _hand_over(peer_py: Path, scheduler: tuple[str, str], official_first: bool, rewrite: Any = None) -> Any:
    address, taskhub = scheduler
    with harness.open_harness("dts", address, taskhub, our_env(), str(ROOT)) as h:
        c = h.client()
        if official_first:
            first = h.spawn("handoff", python=str(peer_py), env=peer_env(), cwd="/")
            stop_first = first.stop
        else:
            stop_first = h.worker(orchestrators=(sc.handoff,), activities=(sc.hello,)).stop
        instance_id = c.schedule_new_orchestration(sc.handoff, instance_id=h.new_id("handoff"))
        waiting = runners.wait_until(runners.custom_status(c, instance_id), "waiting")
        stop_first()
        if official_first and rewrite is not None:
            h.worker(activities=(sc.hello,), configure=lambda w: w.add_orchestrator(rewrite, name="handoff"))
        elif official_first:
            h.worker(orchestrators=(sc.handoff,), activities=(sc.hello,))
        else:
            h.spawn("handoff", python=str(peer_py), env=peer_env(), cwd="/")
        c.raise_orchestration_event(instance_id, "go", data="second")
        return {"first_worker_reached": waiting, **runners.finish(c, instance_id)}


def test_official_worker_starts_our_worker_finishes(peer_py: Path, scheduler: tuple[str, str]) -> None:
    assert _hand_over(peer_py, scheduler, official_first=True) == {"first_worker_reached": "waiting", **EXPECTED}


def test_our_worker_starts_official_worker_finishes(peer_py: Path, scheduler: tuple[str, str]) -> None:
    assert _hand_over(peer_py, scheduler, official_first=False) == {"first_worker_reached": "waiting", **EXPECTED}


def test_official_generator_worker_starts_our_async_rewrite_finishes(peer_py: Path, scheduler: tuple[str, str]) -> None:
    result = _hand_over(peer_py, scheduler, official_first=True, rewrite=handoff_rewritten)
    assert result == {"first_worker_reached": "waiting", **EXPECTED}
