"""Stream modes through the server: model tokens in messages modes (while the node runs), subgraph events."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from durabletask.extensions.langgraph._server.state import to_json
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180)]


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


async def test_tokens_arrive_while_the_node_runs(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        seen: list[tuple[str, Any]] = []
        stream = s.sdk.runs.stream(
            tid,
            "live",
            input={"messages": [{"role": "user", "content": "hi"}], "flag": str(flag)},
            stream_mode=["messages-tuple", "messages"],
        )
        async for part in stream:
            seen.append((part.event, part.data))
            if part.event == "messages" and part.data[0]["content"] == "three":
                flag.write_text("go")  # the node is still running: it waits for this file
        tuples = [d for e, d in seen if e == "messages"]
        assert [m["content"] for m, _ in tuples] == ["one", " ", "two", " ", "three"]
        assert all(meta["langgraph_node"] == "live" for _, meta in tuples)
        partial = [d[0]["content"] for e, d in seen if e == "messages/partial"]
        assert partial[-1] == "one two three"
        assert next(e for e, _ in seen if e.startswith("messages/")) == "messages/metadata"
        assert seen[-1][0] == "end"


async def test_message_chunks_equal_durable_graph(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        inputs = {"messages": [{"role": "user", "content": "hello"}]}
        parts = [p async for p in s.sdk.runs.stream(tid, "talk", input=inputs, stream_mode="messages-tuple")]
        ours = [p.data[0]["content"] for p in parts if p.event == "messages"]
        reference = [
            m.content
            async for m, _ in s.durable("talk").astream(inputs, _cfg(uuid.uuid4().hex), stream_mode="messages")
        ]
        assert ours == reference and "".join(ours) == "you said hello to me"


async def test_subgraph_events_are_named_with_their_namespace(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        parts = [
            p
            async for p in s.sdk.runs.stream(
                tid, "nested", input={"topic": "s"}, stream_mode="updates", stream_subgraphs=True
            )
        ]
        reference = [
            c
            async for c in s.durable("nested").astream(
                {"topic": "s"}, _cfg(uuid.uuid4().hex), stream_mode="updates", subgraphs=True
            )
        ]
        ours = [(p.event.split("|")[1:], p.data) for p in parts if p.event.startswith("updates")]
        assert [(len(ns), data) for ns, data in ours] == [(len(ns), to_json(data)) for ns, data in reference]
        assert any(p.event.startswith("updates|inner:") for p in parts)
        flat = [p async for p in s.sdk.runs.stream(tid, "nested", input={"topic": "f"}, stream_mode="updates")]
        assert all("|" not in p.event for p in flat)
        history = await s.sdk.threads.get_history(tid, limit=20)  # a subgraph task's state: the config naming it
        reference = [h async for h in s.durable("nested").aget_state_history({"configurable": {"thread_id": tid}})]
        assert [h["values"] for h in history] == [h.values for h in reference]
        tasks = [t for h in history for t in h["tasks"] if t["name"] == "inner"]
        assert tasks and all(
            t["state"] is None and t["checkpoint"]["checkpoint_ns"].startswith("inner:") for t in tasks
        )
