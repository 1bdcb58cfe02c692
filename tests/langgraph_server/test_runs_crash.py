"""A worker SIGKILLed in the middle of a run: the run goes on on another worker, and its stream says the attempt."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from durabletask.extensions.langgraph import register_graph
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub, serve
from tests.langgraph_server.support_runs_graphs import BUILDERS

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(240)]
WORKER = Path(__file__).with_name("support_runs_worker.py")


async def test_sigkilled_worker_mid_run(runs_hub: RunsHub, tmp_path: Path) -> None:
    flag = tmp_path / "release"
    first = subprocess.Popen(
        [sys.executable, str(WORKER), runs_hub.address, runs_hub.taskhub], stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "ready"
        async with serve(runs_hub, start_worker=False) as s:
            tid = (await s.sdk.threads.create())["thread_id"]
            inputs = {"messages": [{"role": "user", "content": "hi"}], "flag": str(flag)}
            events: list[tuple[str, Any]] = []
            switched = False
            stream = s.sdk.runs.stream(tid, "live", input=inputs, stream_mode="messages-tuple", stream_resumable=True)
            async for part in stream:
                events.append((part.event, part.data))
                tokens = [d[0]["content"] for e, d in events if e == "messages"]
                if tokens == ["one", " ", "two", " ", "three"] and not switched:
                    first.send_signal(signal.SIGKILL)  # the node holds: its worker dies mid-run
                    first.wait(30)
                    flag.write_text("go")
                    switched = True
                    w = _worker(runs_hub)
                    w.start()
            assert switched, events
            metadata = [d for e, d in events if e == "metadata"]
            assert metadata[0]["attempt"] == 1
            assert metadata[-1]["attempt"] == 2 and metadata[-1]["run_id"] == metadata[0]["run_id"]
            assert events[-1][0] == "end"
            run = await s.sdk.runs.get(tid, metadata[0]["run_id"])
            while run["status"] in ("pending", "running"):
                await asyncio.sleep(0.05)
                run = await s.sdk.runs.get(tid, metadata[0]["run_id"])
            assert run["status"] == "success"
            state = await s.sdk.threads.get_state(tid)
            assert state["values"]["messages"][-1]["content"] == "one two three"
            w.stop()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(30)
        if first.stdout is not None:
            first.stdout.close()


def _worker(hub: RunsHub) -> Any:
    w = hub.worker()
    for name, build in BUILDERS.items():
        register_graph(w, name, build().compile())
    return w
