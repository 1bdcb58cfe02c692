"""The metadata of a run's config, as LangGraph's server gives it: the config's and the run's, the IDs of the run,
and the server's own keys, in what a node reads from its config and in the ``events`` stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.version import __version__ as langgraph_version

from durabletask.extensions.langgraph._server.config import ProjectConfig
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub
from tests.langgraph_server.support_webhooks import LOOPBACK_ALLOWED, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(120)]

KEYS = (
    "owner",
    "team",
    "langgraph_version",
    "langgraph_host",
    "langgraph_api_url",
    "run_id",
    "thread_id",
    "graph_id",
    "assistant_id",
)


class State(TypedDict, total=False):
    seen: dict[str, Any]


def _look(state: State, config: RunnableConfig) -> dict[str, Any]:
    metadata = config.get("metadata") or {}
    return {"seen": {key: metadata.get(key, "<absent>") for key in KEYS}}


def _project() -> ProjectConfig:
    builder = StateGraph(State)
    builder.add_node("look", _look)
    builder.add_edge(START, "look")
    builder.add_edge("look", END)
    graphs = {"look": builder.compile()}
    return ProjectConfig(path=Path(__file__).parent / "langgraph.json", graphs=graphs, webhooks=LOOPBACK_ALLOWED)


def _expected(run_id: str, thread_id: str) -> dict[str, Any]:
    return {
        "owner": "run",  # the run's metadata over its config's
        "team": "config",
        "langgraph_version": langgraph_version,
        "langgraph_host": "self-hosted",
        "langgraph_api_url": None,
        "run_id": run_id,
        "thread_id": thread_id,
        "graph_id": "look",
        "assistant_id": "look",
    }


async def test_a_node_and_the_events_see_the_run_metadata(runs_hub: RunsHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGGRAPH_API_URL", raising=False)
    async with serve(runs_hub, _project()) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        config = {"metadata": {"owner": "config", "team": "config"}}
        parts = [
            p
            async for p in s.sdk.runs.stream(
                tid, "look", input={}, config=config, metadata={"owner": "run"}, stream_mode=["events", "values"]
            )
        ]
        run_id = parts[0].data["run_id"]
        values = [p.data for p in parts if p.event == "values"]
        assert values[-1]["seen"] == _expected(run_id, tid)
        events = [p.data for p in parts if p.event == "events"]
        root = events[0]
        assert (root["event"], root["run_id"]) == ("on_chain_start", run_id)
        assert {k: root["metadata"].get(k, "<absent>") for k in KEYS} == _expected(run_id, tid)
        node = next(e for e in events if e["event"] == "on_chain_start" and e["name"] == "look")
        assert {k: node["metadata"].get(k, "<absent>") for k in KEYS} == _expected(run_id, tid)
        run = await s.sdk.runs.get(tid, run_id)
        assert run["metadata"] == {"owner": "run"}
        assert run["kwargs"]["config"]["metadata"]["team"] == "config"


async def test_langgraph_api_url_comes_from_the_environment(runs_hub: RunsHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_API_URL", "https://agents.example.com")
    async with serve(runs_hub, _project()) as s:
        out = await s.sdk.runs.wait(None, "look", input={})
        assert out["seen"]["langgraph_api_url"] == "https://agents.example.com"


async def test_a_durable_graph_run_gives_its_config_metadata_to_its_nodes(runs_hub: RunsHub) -> None:
    async with serve(runs_hub, _project()) as s:
        config: Any = {"configurable": {"thread_id": "t-meta"}, "metadata": {"owner": "mine"}}
        out = await s.durable("look").ainvoke({}, config)
        assert out["seen"]["owner"] == "mine"
        assert out["seen"]["langgraph_host"] == "<absent>"  # the server's keys are the server's


@pytest.mark.adversarial
async def test_a_config_metadata_that_is_not_an_object_is_refused(runs_hub: RunsHub) -> None:
    async with serve(runs_hub, _project()) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        answer = await s.http.post(f"/threads/{tid}/runs", json={"assistant_id": "look", "config": {"metadata": [1]}})
        assert answer.status_code == 422
        assert "'config.metadata' must be an object" in answer.text
