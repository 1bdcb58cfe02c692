"""A cancelled run's webhook, as LangGraph's server sends it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub
from tests.langgraph_server.support_webhooks import receiver, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(120)]


async def test_a_cancelled_run_posts_langgraph_user_interrupt(runs_hub: RunsHub, tmp_path: Path) -> None:
    async with receiver() as hook, serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, "beat", input={"topic": str(tmp_path), "steps": []}, webhook=hook.url)
        while (await s.sdk.runs.get(tid, run["run_id"]))["status"] == "pending":
            await asyncio.sleep(0.05)
        await s.sdk.runs.cancel(tid, run["run_id"], wait=True)
        [post] = await hook.wait_for(1)
        assert post["json"]["status"] == "interrupted"
        assert post["json"]["error"] == {"error": "UserInterrupt", "message": "User interrupted the run"}


async def test_a_run_that_succeeds_posts_no_error(runs_hub: RunsHub) -> None:
    async with receiver() as hook, serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "a", "steps": []}, webhook=hook.url)
        [post] = await hook.wait_for(1)
        assert post["json"]["status"] == "success" and "error" not in post["json"]
        assert post["json"]["langsmith_session_name"] is None
