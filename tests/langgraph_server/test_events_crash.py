"""A worker SIGKILLed in the middle of a node while a client reads the run's ``events``: the node runs again on
another worker, and the stream shows it as in-process LangGraph shows a node its ``RetryPolicy`` runs again. A run
cancelled while a client reads its events: the node sees it, the stream ends."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.langgraph_server.support_events import graphs, normalised, reference_events, register, serve
from tests.langgraph_server.support_events import slow_retried_builder as retried
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(240)]
WORKER = Path(__file__).with_name("support_events.py")


async def test_a_node_whose_worker_died_streams_again_as_a_retried_node(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    first = subprocess.Popen(
        [sys.executable, str(WORKER), runs_hub.address, runs_hub.taskhub], stdout=subprocess.PIPE, text=True
    )
    second = None
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "ready"
        async with serve(runs_hub, start_worker=False) as s:
            tid = (await s.sdk.threads.create())["thread_id"]
            inputs = {"messages": [{"role": "user", "content": str(flag)}]}
            parts: list[Any] = []
            stream = s.sdk.runs.stream(tid, "slow", input=inputs, stream_mode="events", stream_resumable=True)
            async for part in stream:
                parts.append(part)
                if part.event == "events" and part.data["event"] == "on_chat_model_end" and second is None:
                    first.send_signal(signal.SIGKILL)  # the node holds after its model's answer: its worker dies
                    first.wait(30)
                    flag.write_text("go")
                    second = runs_hub.worker()
                    register(second, graphs())
                    second.start()
            assert second is not None, parts
            metadata = [p.data for p in parts if p.event == "metadata"]
            assert [m["attempt"] for m in metadata] == [1, 2]
            run_id = metadata[0]["run_id"]
            events = [p.data for p in parts if p.event == "events"]
            reference = [data for _, data in await reference_events("slow", inputs, run_id, tid, builder=retried)]
            assert normalised(events) == normalised(reference)
            starts = [e for e in events if e["event"] == "on_chain_start" and e["name"] == "slow"]
            assert len(starts) == 2 and starts[0]["run_id"] != starts[1]["run_id"]
            assert all(e["parent_ids"] == [run_id] for e in starts)
            # where the new attempt begins: right before the node's chain starts again
            names = [(p.event, p.data.get("event") if p.event == "events" else None) for p in parts]
            assert names[names.index(("metadata", None), 1) + 1] == ("events", "on_chain_start")
            assert parts[-1].event == "end"
            replay = [p async for p in s.sdk.runs.join_stream(tid, run_id, last_event_id="-1")]
            assert replay == parts
            state = await s.sdk.threads.get_state(tid)
            assert state["values"]["messages"][-1]["content"] == "one two three"
    finally:
        if second is not None:
            second.stop()
        if first.poll() is None:
            first.kill()
            first.wait(30)
        if first.stdout is not None:
            first.stdout.close()


async def test_a_cancelled_run_stops_its_node_and_ends_its_events(runs_hub: RunsHub, tmp_path: Path) -> None:
    marker = tmp_path / "beat"
    seen = Path(f"{marker}.cancelled")
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        inputs = {"messages": [{"role": "user", "content": str(marker)}]}
        parts: list[Any] = []
        async for part in s.sdk.runs.stream(tid, "beat", input=inputs, stream_mode="events"):
            parts.append(part)
            if part.event == "events" and part.data["event"] == "on_chat_model_end":
                await s.sdk.runs.cancel(tid, parts[0].data["run_id"])
        assert parts[-1].event == "end"
        names = [(p.data["event"], p.data["name"]) for p in parts if p.event == "events"]
        assert names[-1] == ("on_chat_model_end", "ScriptedChatModel")  # nothing ends: the run was cut off
        while not seen.exists():  # the node's next heartbeat raises (bounded by the test's timeout)
            await asyncio.sleep(0.05)
        assert seen.read_text() == "ActivityCancelledError"
        assert (await s.sdk.runs.get(tid, parts[0].data["run_id"]))["status"] == "interrupted"
