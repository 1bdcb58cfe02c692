"""The browser-side client: the current ``@langchain/langgraph-sdk`` from npm, driven by Node as ``useStream`` does.

The script streams a run with ``streamResumable``, drops the connection part-way (the run goes on:
``onDisconnect: "continue"``), and joins the run's stream with the ``Last-Event-ID`` it last saw. What it got before
the drop and after the join must be exactly the run's whole stream (joined again from ``-1``), and, but for the run's
and thread's IDs, exactly what an uninterrupted stream of the same run gives.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.langgraph_server.conftest import registry_needed
from tests.langgraph_server.support_server import CACHE, dev_server, free_port

SCRIPT = Path(__file__).with_name("node") / "resume_stream.mjs"
NODE_DIR = CACHE / "node"
SDK_DIR = NODE_DIR / "node_modules" / "@langchain" / "langgraph-sdk"
DROP_AFTER = 4  # metadata, the input's values, two sections: the node is still running

GRAPH = """
import time
from typing import TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    topic: str
    sections: list[str]
    done: bool


def research(state: State) -> State:
    write = get_stream_writer()
    sections = []
    for i in range(1, 13):
        write({"section": i})
        sections.append(f"{state['topic']} {i}")
        time.sleep(0.1)
    return {"sections": sections}


def conclude(state: State) -> State:
    return {"done": True}


builder = StateGraph(State)
builder.add_node("research", research)
builder.add_node("conclude", conclude)
builder.add_edge(START, "research")
builder.add_edge("research", "conclude")
builder.add_edge("conclude", END)
graph = builder.compile()
"""


@pytest.fixture(scope="module")
def langgraph_js_sdk() -> Path:
    """``@langchain/langgraph-sdk@latest`` installed from npm into ``.cache/`` (updated on each run)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        registry_needed("Node.js and npm are not installed (.ci/run installs them)")
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    install = subprocess.run(
        [str(npm), "install", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund", "@langchain/langgraph-sdk@latest"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if install.returncode != 0:
        lines = install.stderr.strip().splitlines()
        registry_needed(lines[-1] if lines else f"npm install exited {install.returncode}")
    return SDK_DIR


def _without_ids(events: list[dict[str, Any]], run_id: str, thread_id: str) -> list[tuple[str, str]]:
    text = [(e["event"], json.dumps(e["data"], sort_keys=True)) for e in events]
    return [(event, data.replace(run_id, "<run>").replace(thread_id, "<thread>")) for event, data in text]


@pytest.mark.timeout(400)
def test_a_dropped_stream_joined_with_last_event_id_gets_exactly_the_rest(
    langgraph_js_sdk: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "research.py").write_text(GRAPH)
    (project / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"research": "./research.py:graph"}})
    )
    port = free_port()
    with dev_server(project / "langgraph.json", port, tmp_path / "server.log") as server:
        run = subprocess.run(
            ["node", str(SCRIPT), str(langgraph_js_sdk), f"http://127.0.0.1:{port}", "research", str(DROP_AFTER)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        log = server.tail(60)
    assert run.returncode == 0, f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n--- server ---\n{log}"
    out = json.loads(run.stdout.strip().splitlines()[-1])
    reference, resumed = out["reference"], out["resumed"]
    print(
        f"@langchain/langgraph-sdk {out['version']}: dropped after {len(resumed['before'])} events at "
        f"{resumed['lastEventId']!r}, {len(resumed['after'])} after the join"
    )
    before, after, replay = resumed["before"], resumed["after"], resumed["replay"]
    assert len(before) == DROP_AFTER and after, resumed
    assert all(e["id"] is not None for e in before + after), "streamResumable events carry resumable IDs"
    assert before + after == replay, "the join with Last-Event-ID gave other events than the run's whole stream"
    assert _without_ids(before + after, resumed["runId"], resumed["threadId"]) == _without_ids(
        reference["events"], reference["runId"], reference["threadId"]
    ), "the resumed stream differs from an uninterrupted one"
    assert [e["data"] for e in before + after if e["event"] == "custom"] == [{"section": i} for i in range(1, 13)]
    assert resumed["status"] == "success"
