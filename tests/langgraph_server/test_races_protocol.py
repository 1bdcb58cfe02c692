"""The thread's protocol stream (``threads.stream``) around runs cancelled in the queue and runs deleted: every run
that was on the thread has its events there, and an event keeps its number whatever happens to its run later."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.langgraph_server.support_races import serve_held, status_becomes
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]
CHANNELS = ["values", "updates", "lifecycle"]

Events = list[dict[str, Any]]


async def _read(http: httpx.AsyncClient, thread_id: str, since: int, done: Callable[[Events], bool]) -> Events:
    """The thread's protocol events after ``since``, until ``done`` says enough."""
    events: Events = []
    body = {"channels": CHANNELS, "since": since}
    async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as response:
        assert response.status_code == 200
        data: list[str] = []
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                events.append(json.loads("\n".join(data)))
                data = []
                if done(events):
                    break
    return events


def _lifecycle(events: Events) -> list[tuple[str, str]]:
    """The root lifecycle events: ``(run_id, event)``."""
    return [
        (e["params"]["data"].get("run_id"), e["params"]["data"]["event"])
        for e in events
        if e["method"] == "lifecycle" and not e["params"]["namespace"]
    ]


def _ended(run_id: str) -> Callable[[Events], bool]:
    return lambda events: any(r == run_id and e in ("completed", "failed") for r, e in _lifecycle(events))


def _untimed(events: Events) -> list[Any]:
    return [{**e, "params": {k: v for k, v in e["params"].items() if k != "timestamp"}} for e in events]


async def test_a_run_cancelled_in_the_queue_ends_on_the_thread_stream_after_the_runs_ahead(
    runs_hub: RunsHub, tmp_path: Path
) -> None:
    flag = tmp_path / "release"
    async with serve_held(runs_hub) as (s, _):
        tid = (await s.sdk.threads.create())["thread_id"]
        first = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        await status_becomes(s, tid, first["run_id"], "running")
        queued = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)}, multitask_strategy="enqueue")
        await s.sdk.runs.cancel(tid, queued["run_id"])
        # Recorded at once, as LangGraph's server does; it never runs.
        await status_becomes(s, tid, queued["run_id"], "interrupted")
        after = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)}, multitask_strategy="enqueue")
        flag.write_text("go")
        await s.sdk.runs.join(tid, after["run_id"])
        events = await _read(s.http, tid, 0, _ended(after["run_id"]))
        runs = _lifecycle(events)
        assert runs == [
            (first["run_id"], "running"),
            (first["run_id"], "completed"),
            (queued["run_id"], "running"),
            (queued["run_id"], "failed"),
            (after["run_id"], "running"),
            (after["run_id"], "completed"),
        ]
        cancelled = [e for e in events if e["params"]["data"].get("run_id") == queued["run_id"]]
        assert cancelled[-1]["params"]["data"]["error"] == "the run was cancelled"
        assert (await s.sdk.runs.get(tid, queued["run_id"]))["status"] == "interrupted"
        steps = [step.partition(":")[0] for step in (await s.sdk.threads.get_state(tid))["values"]["steps"]]
        assert steps == ["plan", "held", "write"] * 2


async def test_deleting_a_run_keeps_every_event_number(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    flag.write_text("go")
    async with serve_held(runs_hub) as (s, _), serve_held(runs_hub, start_worker=False) as (other, _):
        tid = (await s.sdk.threads.create())["thread_id"]
        ids = []
        for _ in range(3):
            run = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
            await s.sdk.runs.join(tid, run["run_id"])
            ids.append(run["run_id"])
        before = await _read(s.http, tid, 0, _ended(ids[-1]))
        assert [r for r, _ in _lifecycle(before)] == [ids[0], ids[0], ids[1], ids[1], ids[2], ids[2]]
        await s.sdk.runs.delete(tid, ids[1])
        await other.sdk.runs.delete(tid, ids[0])
        # Read again, from the start and after any event, through either server: the same events, the same numbers.
        assert _untimed(await _read(other.http, tid, 0, _ended(ids[-1]))) == _untimed(before)
        for cut in (before[len(before) // 3], before[2 * len(before) // 3]):
            again = await _read(s.http, tid, cut["seq"], _ended(ids[-1]))
            assert _untimed(again) == _untimed([e for e in before if e["seq"] > cut["seq"]])
        assert [r["run_id"] for r in await s.sdk.runs.list(tid)] == [ids[2]]
