"""A rolled-back run's webhook, as LangGraph's server sends it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub
from tests.langgraph_server.support_webhooks import receiver, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(120)]


async def test_a_rolled_back_run_posts_rollback_without_values(runs_hub: RunsHub, tmp_path: Path) -> None:
    async with receiver() as hook, serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, "beat", input={"topic": str(tmp_path), "steps": []}, webhook=hook.url)
        while (await s.sdk.runs.get(tid, run["run_id"]))["status"] == "pending":
            await asyncio.sleep(0.05)
        await s.sdk.runs.cancel(tid, run["run_id"], wait=True, action="rollback")
        [post] = await hook.wait_for(1)
        assert post["json"]["run_id"] == run["run_id"]
        assert post["json"]["status"] == "rollback" and post["json"]["values"] is None
        assert post["json"]["error"] == {"error": "UserRollback", "message": "User requested rollback of the run"}
        with pytest.raises(httpx.HTTPStatusError) as gone:  # LangGraph's server deletes a rolled-back run
            await s.sdk.runs.get(tid, run["run_id"])
        assert gone.value.response.status_code == 404


async def test_a_webhook_carries_the_kwargs_runs_get_shows(runs_hub: RunsHub) -> None:
    async with receiver() as hook, serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(
            tid, "chain", input={"topic": "k", "steps": []}, webhook=hook.url, stream_subgraphs=True
        )
        await s.sdk.runs.join(tid, run["run_id"])
        [post] = await hook.wait_for(1)
        shown = await s.sdk.runs.get(tid, run["run_id"])
        assert post["json"]["kwargs"] == shown["kwargs"]
        assert post["json"]["kwargs"]["subgraphs"] is True and post["json"]["kwargs"]["checkpoint_during"] is True
        assert {"feedback_keys", "temporary", "resumable", "webhook", "input", "config"} <= set(shown["kwargs"])
        listed = await s.sdk.runs.list(tid)
        assert [r["kwargs"] for r in listed] == [shown["kwargs"]]
        assert listed[0]["langsmith_session_name"] is None
