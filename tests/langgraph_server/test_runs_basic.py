"""Runs through langgraph_sdk against the server on the emulator: results, streams and states equal what the same
graph gives through DurableGraph."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(120)]


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


async def test_wait_gives_what_durable_graph_gives(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        thread = await s.sdk.threads.create(metadata={"owner": "me"})
        result = await s.sdk.runs.wait(thread["thread_id"], "chain", input={"topic": "x"})
        reference = await s.durable("chain").ainvoke({"topic": "x"}, _cfg(uuid.uuid4().hex))
        assert result == reference == {"topic": "x", "steps": ["plan:x", "write:x"]}
        got = await s.sdk.threads.get(thread["thread_id"])
        assert got["status"] == "idle"
        assert got["values"] == reference
        assert got["metadata"] == {"owner": "me", "graph_id": "chain", "assistant_id": "chain"}
        runs = await s.sdk.runs.list(thread["thread_id"])
        assert [r["status"] for r in runs] == ["success"]


async def test_stream_events_and_ids(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        thread = await s.sdk.threads.create()
        parts = [
            p
            async for p in s.sdk.runs.stream(
                thread["thread_id"], "chain", input={"topic": "y"}, stream_mode=["values", "updates"]
            )
        ]
        names = [p.event for p in parts]
        assert names[0] == "metadata"
        assert set(parts[0].data) == {"run_id", "attempt"}
        reference = [
            chunk
            async for chunk in s.durable("chain").astream(
                {"topic": "y"}, _cfg(uuid.uuid4().hex), stream_mode=["values", "updates"]
            )
        ]
        assert [(p.event, p.data) for p in parts[1:-1]] == [tuple(c) for c in reference]
        assert names[-1] == "end"


async def test_state_and_history_equal_durable_graph(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        thread = await s.sdk.threads.create()
        tid = thread["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "z"})
        state = await s.sdk.threads.get_state(tid)
        snapshot = await s.durable("chain").aget_state(_cfg(tid))
        assert state["values"] == snapshot.values
        assert state["checkpoint"]["checkpoint_id"] == snapshot.config["configurable"]["checkpoint_id"]
        assert state["next"] == []
        history = await s.sdk.threads.get_history(tid, limit=20)
        reference = [h async for h in s.durable("chain").aget_state_history(_cfg(tid), limit=20)]
        assert [h["checkpoint"]["checkpoint_id"] for h in history] == [
            h.config["configurable"]["checkpoint_id"] for h in reference
        ]
        assert [h["values"] for h in history] == [h.values for h in reference]
