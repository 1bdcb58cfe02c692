"""Hostile ``events`` streams: events far larger than a stream item, and custom events holding what no serializer
writes."""

from __future__ import annotations

import logging

import pytest

from tests.langgraph_server.support_events import serve
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(240), pytest.mark.adversarial]


async def test_an_event_of_megabytes_arrives_whole(runs_hub: RunsHub) -> None:
    size = 3 * 1024 * 1024
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        inputs = {"messages": [{"role": "user", "content": str(size)}]}
        parts = [p async for p in s.sdk.runs.stream(tid, "big", input=inputs, stream_mode=["events", "values"])]
        blobs = [p.data for p in parts if p.event == "events" and p.data["event"] == "on_custom_event"]
        assert len(blobs) == 1 and blobs[0]["data"] == {"text": "x" * size}
        names = [(p.data["event"], p.data["name"]) for p in parts if p.event == "events"]
        assert names[-3:] == [("on_chain_stream", "big"), ("on_chain_end", "big"), ("on_chain_end", "LangGraph")]
        assert parts[-1].event == "end" and (await s.sdk.runs.list(tid))[0]["status"] == "success"


async def test_a_flood_of_events_arrives_whole_and_in_order(runs_hub: RunsHub) -> None:
    count = 2000
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        inputs = {"messages": [{"role": "user", "content": str(count)}]}
        stream = s.sdk.runs.stream(tid, "flood", input=inputs, stream_mode="events", stream_resumable=True)
        parts = [p async for p in stream]
        ticks = [p.data["data"]["i"] for p in parts if p.event == "events" and p.data["name"] == "tick"]
        assert ticks == list(range(count)) and parts[-1].event == "end"
        middle = parts[len(parts) // 2]
        rest = [p async for p in s.sdk.runs.join_stream(tid, parts[0].data["run_id"], last_event_id=middle.id)]
        assert rest == parts[len(parts) // 2 + 1 :]


async def test_what_cannot_be_written_goes_out_as_null_and_the_run_goes_on(
    runs_hub: RunsHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="durabletask.langgraph.events")
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        inputs = {"messages": [{"role": "user", "content": "x"}]}
        parts = [p async for p in s.sdk.runs.stream(tid, "odd", input=inputs, stream_mode="events")]
        custom = [p.data for p in parts if p.event == "events" and p.data["event"] == "on_custom_event"]
        # LangGraph's server sends what it cannot encode as null; the event itself, and all after it, arrive
        assert [(c["name"], c["data"]) for c in custom] == [
            ("opaque", {"handle": None, "lock": None}),
            ("cycle", {"n": 1, "self": None}),
        ]
        names = [(p.data["event"], p.data["name"]) for p in parts if p.event == "events"]
        assert names[-2:] == [("on_chain_end", "odd"), ("on_chain_end", "LangGraph")]
        assert [p.event for p in parts if p.event in ("error", "end")] == ["end"]
        state = await s.sdk.threads.get_state(tid)
        assert state["values"]["messages"][-1]["content"] == "after the event"
    warned = [r.getMessage() for r in caplog.records if r.name == "durabletask.langgraph.events"]
    assert len(warned) == 2 and "'opaque'" in warned[0] and "data.self (the value holding it)" in warned[1]
    assert "data.handle (tests.langgraph_server.support_events._Opaque)" in warned[0]
    assert "data.lock (_thread.lock)" in warned[0]
