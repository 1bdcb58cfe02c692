"""A run's options of LangGraph's server (honoured, or refused naming why), and deleting and cancelling runs."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest

from durabletask.extensions.langgraph._server.system import info
from tests.langgraph_server.support_runs import RunsHub, Served, runs_emulator, runs_hub, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]

REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"feedback_keys": ["score"]}, "feedback_keys", "LangSmith"),
    ({"langsmith_tracing": {"project_name": "p"}}, "langsmith_tracer", "LangSmith"),
    ({"checkpoint_during": False}, "checkpoint_during", "every superstep"),
    ({"strict_resume": False}, "strict_resume", "always refused"),
]


async def _status_becomes(s: Served, thread_id: str, run_id: str, wanted: str) -> dict[str, Any]:
    while True:
        run = await s.sdk.runs.get(thread_id, run_id)
        if run["status"] == wanted:
            return run
        await asyncio.sleep(0.02)


async def test_options_our_runs_cannot_honour_are_refused_naming_the_field(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        for option, field, why in REFUSED:
            with warnings.catch_warnings():  # the SDK warns that checkpoint_during is deprecated
                warnings.simplefilter("ignore", DeprecationWarning)
                with pytest.raises(httpx.HTTPStatusError) as refused:
                    async for _ in s.sdk.runs.stream(tid, "chain", input={"topic": "o"}, **option):
                        pass  # feedback_keys: only runs.stream takes it
            assert refused.value.response.status_code == 422, option
            detail = refused.value.response.json()["detail"]
            assert f"'{field}'" in detail and why in detail, detail
        for body, field in [
            ({"stream_version": "v2"}, "stream_version"),
            ({"strict_resume": "yes"}, "strict_resume"),
            ({"checkpoint_during": 1}, "checkpoint_during"),
        ]:
            answer = await s.http.post(f"/threads/{tid}/runs", json={"assistant_id": "chain", **body})
            assert answer.status_code == 422 and f"'{field}'" in answer.json()["detail"], answer.text
        assert await s.sdk.runs.list(tid) == []  # nothing refused was started


async def test_options_asking_what_our_runs_do_are_honoured(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        assert info(s.ctx)["flags"]["strict_resume"] is True  # the body of /info
        tid = (await s.sdk.threads.create())["thread_id"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            done = await s.sdk.runs.wait(tid, "chain", input={"topic": "h"}, checkpoint_during=True, strict_resume=True)
        assert done == {"topic": "h", "steps": ["plan:h", "write:h"]}
        # strict_resume: a resume that answers no waiting interrupt is refused; the thread stays as it was
        before = await s.sdk.threads.get_state(tid)
        resumed = await s.http.post(
            f"/threads/{tid}/runs/wait",
            json={"assistant_id": "chain", "command": {"resume": "yes"}, "strict_resume": True},
        )
        assert resumed.json()["__error__"]["error"] == "error", resumed.text  # the run failed (as LangGraph's does)
        refused = (await s.sdk.runs.list(tid))[0]
        assert refused["status"] == "error"
        assert (await s.sdk.threads.get_state(tid))["values"] == before["values"]


async def test_delete_a_run_unknown_and_cancelled(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        with pytest.raises(httpx.HTTPStatusError) as unknown:
            await s.sdk.runs.delete(tid, "00000000-0000-0000-0000-000000000000")
        assert unknown.value.response.status_code == 404
        run = await s.sdk.runs.create(tid, "held", input={"topic": str(flag)})
        await _status_becomes(s, tid, run["run_id"], "running")
        await s.sdk.runs.cancel(tid, run["run_id"], wait=True)
        await s.sdk.runs.delete(tid, run["run_id"])  # a cancelled run has ended: it can go
        assert await s.sdk.runs.list(tid) == []
        flag.write_text("go")
        assert (await s.sdk.runs.wait(tid, "held", input={"topic": str(flag)}))["steps"][0] == f"plan:{flag}"


async def test_cancel_many_of_one_thread_and_refused_without_a_filter(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        one, two = [(await s.sdk.threads.create())["thread_id"] for _ in range(2)]
        first = await s.sdk.runs.create(one, "held", input={"topic": str(flag)})
        queued = await s.sdk.runs.create(one, "held", input={"topic": str(flag)})
        other = await s.sdk.runs.create(two, "held", input={"topic": str(flag)})
        await _status_becomes(s, one, first["run_id"], "running")
        await _status_becomes(s, two, other["run_id"], "running")
        with pytest.raises(httpx.HTTPStatusError) as bare:
            await s.sdk.runs.cancel_many()
        assert bare.value.response.status_code == 422 and "status" in bare.value.response.json()["detail"]
        assert (await s.sdk.runs.get(one, queued["run_id"]))["status"] == "pending"
        await s.sdk.runs.cancel_many(thread_id=one, status="pending")  # the status filters a thread's runs too
        await _status_becomes(s, one, queued["run_id"], "interrupted")
        assert (await s.sdk.runs.get(one, first["run_id"]))["status"] == "running"
        await s.sdk.runs.cancel_many(thread_id=one, status="all")  # every run of that thread, none of the other's
        await _status_becomes(s, one, first["run_id"], "interrupted")
        assert (await s.sdk.runs.get(two, other["run_id"]))["status"] == "running"
        await s.sdk.runs.cancel_many(thread_id=two, run_ids=[other["run_id"]], action="rollback")
        with pytest.raises(httpx.HTTPStatusError) as gone:  # a rollback forgets the run
            await s.sdk.runs.get(two, other["run_id"])
        assert gone.value.response.status_code == 404
        flag.write_text("go")
