"""Runs racing to one thread through two ``durabletask langgraph serve`` processes (no memory shared but the task
hub) in front of one worker and one emulator: of ``reject`` runs exactly one is accepted, and of ``interrupt`` runs
exactly one runs to its end, as LangGraph's server gives."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.langgraph_server.support_server import ServerProcess, cli, free_port
from tests.support.reliability import kill, start_emulator

pytestmark = [pytest.mark.timeout(400)]
RACERS = 6

GRAPH = """
import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from durabletask.extensions.langgraph import heartbeat


class State(TypedDict, total=False):
    sections: int
    written: list[int]


def write(state: State) -> State:
    for _ in range(state["sections"]):
        heartbeat()
        time.sleep(0.05)
    return {"written": [*state.get("written", []), state["sections"]]}


builder = StateGraph(State)
builder.add_node("write", write)
builder.add_edge(START, "write")
builder.add_edge("write", END)
graph = builder.compile()
"""


@pytest.fixture
def urls(tmp_path: Path) -> Iterator[tuple[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "sections.py").write_text(GRAPH)
    config = project / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"sections": "./sections.py:graph"}}))
    port = free_port()
    emulator = start_emulator(tmp_path / "hub.db", port)
    hub = ["--endpoint", f"127.0.0.1:{port}", "--taskhub", "default"]
    found: list[str] = []
    try:
        with ExitStack() as processes:
            worker = ServerProcess(cli("langgraph", "worker", "--config", str(config), *hub), None, tmp_path / "w.log")
            processes.callback(worker.start().stop)
            for n in range(2):
                http = free_port()
                command = cli("langgraph", "serve", "--config", str(config), *hub, "--port", str(http))
                url = f"http://127.0.0.1:{http}"
                server = ServerProcess(command, url, tmp_path / f"server-{n}.log", cwd=project).start()
                processes.callback(server.stop)
                found.append(url)
            yield found[0], found[1]
    finally:
        kill(emulator, signal.SIGTERM)


async def _race(clients: list[Any], thread_id: str, strategy: str, sections: int) -> list[Any]:
    calls = [
        clients[n % 2].runs.create(thread_id, "sections", input={"sections": sections}, multitask_strategy=strategy)
        for n in range(RACERS)
    ]
    return await asyncio.gather(*calls, return_exceptions=True)


async def _races(first_url: str, second_url: str) -> None:
    async with get_client(url=first_url) as first, get_client(url=second_url) as second:
        for _ in range(3):  # idle threads: of the reject runs, one is accepted
            thread_id = (await first.threads.create())["thread_id"]
            outcomes = await _race([first, second], thread_id, "reject", 1)
            won = [o for o in outcomes if isinstance(o, dict)]
            lost = [o for o in outcomes if isinstance(o, httpx.HTTPStatusError)]
            assert len(won) == 1 and len(lost) == RACERS - 1, outcomes
            assert {e.response.status_code for e in lost} == {409}
            await second.runs.join(thread_id, won[0]["run_id"])
            assert [r["status"] for r in await first.runs.list(thread_id)] == ["success"]
        # A busy thread: of the interrupt runs, each cancels those in flight when it was admitted; one runs on.
        thread_id = (await second.threads.create())["thread_id"]
        long = await first.runs.create(thread_id, "sections", input={"sections": 3000})
        racers = [o["run_id"] for o in await _race([first, second], thread_id, "interrupt", 1)]
        for run_id in racers:
            await first.runs.join(thread_id, run_id)
        statuses = {r["run_id"]: r["status"] for r in await second.runs.list(thread_id, limit=20)}
        assert statuses[long["run_id"]] == "interrupted"
        assert sorted(statuses[r] for r in racers) == ["interrupted"] * (RACERS - 1) + ["success"]
        assert (await first.threads.get_state(thread_id))["values"]["written"] == [1]


def test_racing_runs_through_two_server_processes(urls: tuple[str, str]) -> None:
    asyncio.run(_races(*urls))
