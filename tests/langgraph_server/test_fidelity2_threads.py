"""A thread's state_updated_at and error, as LangGraph's server keeps them."""

from __future__ import annotations

import pytest

from durabletask.extensions.langgraph._records_effects import effects
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub
from tests.langgraph_server.support_webhooks import serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(120)]


async def test_a_failed_run_leaves_its_error_on_the_thread_and_the_next_one_clears_it(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        made = await s.sdk.threads.create()
        tid = made["thread_id"]
        assert made["state_updated_at"] == made["created_at"] and made["error"] is None
        await s.sdk.runs.wait(tid, "fragile", input={"topic": "boom", "steps": []}, raise_error=False)
        failed = await s.sdk.threads.get(tid)
        assert failed["status"] == "error"
        assert failed["error"] == {"error": "ValueError", "message": "the topic is boom"}
        assert failed["state_updated_at"] > made["state_updated_at"]
        await s.sdk.runs.wait(tid, "fragile", input={"topic": "calm", "steps": []})
        fine = await s.sdk.threads.get(tid)
        assert fine["status"] == "idle" and fine["error"] is None
        assert fine["state_updated_at"] > failed["state_updated_at"]


async def test_an_update_of_the_state_moves_state_updated_at(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "u", "steps": []})
        before = await s.sdk.threads.get(tid)
        await s.sdk.threads.update_state(tid, {"topic": "v"})
        after = await s.sdk.threads.get(tid)
        assert after["state_updated_at"] > before["state_updated_at"] and after["error"] is None
        [newest] = await s.sdk.threads.search(
            sort_by="state_updated_at", limit=1, select=["thread_id", "state_updated_at"]
        )
        assert newest == {"thread_id": tid, "state_updated_at": after["state_updated_at"]}


def test_a_run_admitted_or_started_leaves_the_state_fields_alone() -> None:
    failed = {"thread_id": "t", "runs": {}, "state_updated_at": "2026-01-01T00:00:00+00:00", "error": {"error": "E"}}
    for status, thread in (("pending", {"graph_id": "g"}), ("running", {"status": "busy"})):
        data = {"at": "2026-01-02T00:00:00+00:00", "run": {"run_id": "r", "status": status}, "thread": thread}
        after = {**failed, "runs": {"r": {"run_id": "r", "status": status}}}
        effects(failed, after, "run", data)
        assert after["state_updated_at"] == failed["state_updated_at"] and after["error"] == {"error": "E"}
    ended = {
        "at": "2026-01-03T00:00:00+00:00",
        "run": {"run_id": "r", "status": "success"},
        "thread": {"status": "idle"},
    }
    after = {**failed, "runs": {"r": {"run_id": "r", "status": "success"}}}
    effects(failed, after, "run", ended)
    assert after["state_updated_at"] == ended["at"] and after["error"] is None
