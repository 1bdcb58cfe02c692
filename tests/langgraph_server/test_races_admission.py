"""Runs racing to one thread under each ``multitask_strategy``, through langgraph_sdk and two servers of one hub.

Every request of a race is held where its run is admitted (after its server looked at the thread and found it as
the others did) and all are let go together, so the record of the thread alone decides between them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from durabletask.extensions.langgraph._server.threads_records import Records
from tests.langgraph_server.support_races import Barrier, HeldClient, serve_held, status_becomes
from tests.langgraph_server.support_runs import RunsHub, Served, runs_emulator, runs_hub

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]
RACERS = 4


async def _race(
    pairs: list[tuple[Served, HeldClient]], thread_id: str, strategy: str, payload: dict[str, Any]
) -> list[Any]:
    """``RACERS`` runs created at once, alternately through each server, all held until every one is admitted."""
    barrier = Barrier(RACERS)
    for _, held in pairs:
        held.barrier = barrier
    calls = [
        pairs[n % len(pairs)][0].sdk.runs.create(thread_id, "held", input=payload, multitask_strategy=strategy)
        for n in range(RACERS)
    ]
    try:
        return await asyncio.gather(*calls, return_exceptions=True)
    finally:
        for _, held in pairs:
            held.barrier = None


def _accepted(outcomes: list[Any]) -> list[dict[str, Any]]:
    return [o for o in outcomes if isinstance(o, dict)]


async def test_of_racing_rejects_one_is_accepted_and_the_others_get_409(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve_held(runs_hub) as one, serve_held(runs_hub, start_worker=False) as two:
        s = one[0]
        tid = (await s.sdk.threads.create())["thread_id"]
        outcomes = await _race([one, two], tid, "reject", {"topic": str(flag)})
        won = _accepted(outcomes)
        lost = [o for o in outcomes if isinstance(o, httpx.HTTPStatusError)]
        assert len(won) == 1 and len(lost) == RACERS - 1, outcomes
        assert all(e.response.status_code == 409 and "busy" in e.response.json()["detail"] for e in lost)
        assert one[1].admissions + two[1].admissions == RACERS  # every request reached the record: it decided
        # The losers were never made: only the winner is a run of the thread, and it runs.
        assert [r["run_id"] for r in await s.sdk.runs.list(tid)] == [won[0]["run_id"]]
        flag.write_text("go")
        await two[0].sdk.runs.join(tid, won[0]["run_id"])
        assert (await s.sdk.runs.get(tid, won[0]["run_id"]))["status"] == "success"
        assert (await s.sdk.threads.get_state(tid))["values"]["steps"][0] == f"plan:{flag}"
        # The thread idle again, a reject run is accepted.
        after = await two[0].sdk.runs.create(tid, "held", input={"topic": str(flag)}, multitask_strategy="reject")
        await s.sdk.runs.join(tid, after["run_id"])
        assert (await s.sdk.runs.get(tid, after["run_id"]))["status"] == "success"


async def test_racing_enqueues_all_run_one_after_another(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve_held(runs_hub) as one, serve_held(runs_hub, start_worker=False) as two:
        s = one[0]
        tid = (await s.sdk.threads.create())["thread_id"]
        first = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        await status_becomes(s, tid, first["run_id"], "running")
        outcomes = await _race([one, two], tid, "enqueue", {"topic": str(flag)})
        queued = _accepted(outcomes)
        assert len(queued) == RACERS, outcomes
        assert [(await s.sdk.runs.get(tid, r["run_id"]))["status"] for r in queued] == ["pending"] * RACERS
        flag.write_text("go")
        for run in queued:
            await s.sdk.runs.join(tid, run["run_id"])
        ended = [(await s.sdk.runs.get(tid, r["run_id"]))["status"] for r in [first, *queued]]
        assert ended == ["success"] * (RACERS + 1)
        # One writer: each run's three steps follow the previous run's, never interleaved.
        steps = (await s.sdk.threads.get_state(tid))["values"]["steps"]
        assert len(steps) == 3 * (RACERS + 1)
        assert [step.partition(":")[0] for step in steps] == ["plan", "held", "write"] * (RACERS + 1)


async def _unsuperseded(s: Served, thread_id: str, run_ids: list[str]) -> list[str]:
    """The runs the thread's record still holds that no other run names among the runs in flight when the record
    admitted it (a rolled-back run is gone from the record)."""
    record = await Records(s.ctx.client).read(thread_id)
    assert record is not None
    kept = [r for r in run_ids if r in record["runs"]]
    named = {r for run_id in kept for r in record["runs"][run_id].get("supersedes") or ()}
    return [r for r in kept if r not in named]


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_of_racing_interrupts_the_last_admitted_runs(runs_hub: RunsHub, tmp_path: Path, strategy: str) -> None:
    flag = tmp_path / "release"
    async with serve_held(runs_hub) as one, serve_held(runs_hub, start_worker=False) as two:
        s = one[0]
        tid = (await s.sdk.threads.create())["thread_id"]
        first = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        await status_becomes(s, tid, first["run_id"], "running")
        racers = [r["run_id"] for r in _accepted(await _race([one, two], tid, strategy, {"topic": str(flag)}))]
        assert len(racers) == RACERS
        # As LangGraph's server does, each run cancels the runs in flight when it was admitted: the last one
        # admitted is the only one that no other cancels, and the only one that runs to its end.
        winners = await _unsuperseded(s, tid, racers)
        assert len(winners) == 1
        flag.write_text("go")
        await s.sdk.runs.join(tid, winners[0])
        listed = {r["run_id"]: r["status"] for r in await s.sdk.runs.list(tid, limit=20)}
        steps = [step.partition(":")[0] for step in (await s.sdk.threads.get_state(tid))["values"]["steps"]]
        if strategy == "interrupt":  # the cancelled runs are interrupted, keeping the steps they finished
            cancelled = [first["run_id"], *(r for r in racers if r != winners[0])]
            assert listed == {**dict.fromkeys(cancelled, "interrupted"), winners[0]: "success"}
            assert steps[-3:] == ["plan", "held", "write"] and set(steps[:-3]) == {"plan"}
        else:  # rollback: they are gone, and so is what they wrote
            assert listed == {winners[0]: "success"}
            assert steps == ["plan", "held", "write"]
