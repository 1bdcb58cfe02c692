"""``durabletask langgraph dev`` from this checkout's wheels, installed as users install it, served to langgraph-sdk.

A fresh venv first gets ``dtscale`` alone: ``durabletask langgraph dev`` there must say which extra to install,
and exit. Then ``pip install 'dtscale[langgraph]'`` (the registry brings LangGraph, langgraph-sdk and aiohttp)
and nothing else: the venv's ``durabletask langgraph dev`` serves a small ``langgraph.json`` project written by
the test, behind ``--auth-token``, and a client script run by the venv's own interpreter, with the venv's own
``langgraph_sdk``, creates a thread, streams a run to an interrupt, resumes it, and reads the thread's state and
history. The venv is built once for the module; the wheels once per session.

The registry is needed: in CI a registry that does not answer fails the test; elsewhere it skips and says why.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.system.install.support import Preparations, Process, Venv, Wheels, make_venv, prepared_early

pytestmark = pytest.mark.timeout(900)

TOKEN = "install-test-token"

GRAPH = '''
"""The project's graph: a draft, then a human review (an interrupt), then a verdict."""
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    topic: str
    draft: str
    verdict: str


def write(state: State) -> State:
    return {"draft": f"a note on {state['topic']}"}


def review(state: State) -> State:
    answer = interrupt({"question": "approve?", "draft": state["draft"]})
    return {"verdict": f"{answer}: {state['draft']}"}


builder = StateGraph(State)
builder.add_node("write", write)
builder.add_node("review", review)
builder.add_edge(START, "write")
builder.add_edge("write", "review")
builder.add_edge("review", END)
graph = builder.compile()
'''

CLIENT = '''
"""What a user's client does, with the venv's own langgraph_sdk; prints one JSON line of what it saw."""
import asyncio
import json
import sys

import langgraph_sdk
from langgraph_sdk import get_client


async def main(url: str, token: str) -> None:
    client = get_client(url=url, api_key=token)
    seen = {"sdk_module": langgraph_sdk.__file__}
    seen["ok"] = await client.http.get("/ok")
    assistants = await client.assistants.search(graph_id="review")
    seen["assistants"] = [a["graph_id"] for a in assistants]
    thread = await client.threads.create(metadata={"owner": "install-test"})
    tid = thread["thread_id"]
    seen["events"] = []
    async for part in client.runs.stream(tid, "review", input={"topic": "wheels"}, stream_mode=["values", "updates"]):
        seen["events"].append([part.event, part.data])
    state = await client.threads.get_state(tid)
    seen["at_interrupt"] = {"values": state["values"], "next": state["next"],
                            "interrupts": [i["value"] for t in state["tasks"] for i in t["interrupts"]]}
    final = await client.runs.wait(tid, "review", command={"resume": "approved"})
    seen["final"] = final
    state = await client.threads.get_state(tid)
    seen["after"] = {"values": state["values"], "next": state["next"]}
    seen["history"] = len(await client.threads.get_history(tid, limit=50))
    seen["thread"] = await client.threads.get(tid)
    runs = await client.runs.list(tid)
    seen["run_statuses"] = sorted(r["status"] for r in runs)
    await client.aclose()
    print(json.dumps(seen, default=str))


asyncio.run(main(sys.argv[1], sys.argv[2]))
'''


@dataclass
class Installed:
    env: Venv
    project: Path
    without_extra: list[subprocess.CompletedProcess[str]]  # dev, serve, worker
    help_without_extra: subprocess.CompletedProcess[str]


def _project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "review_graph.py").write_text(GRAPH)
    config = {"dependencies": ["."], "graphs": {"review": "./review_graph.py:graph"}}
    (folder / "langgraph.json").write_text(json.dumps(config))
    return folder / "langgraph.json"


@prepared_early
def _installed(wheels: Wheels, base: Path) -> Installed:
    project = _project(base / "project")
    env = make_venv(base / "venv", ["dtscale==0.1.0"], wheels)
    without = [
        env.run("durabletask", "langgraph", action, "--config", str(project), *extra, timeout=120)
        for action, extra in (("dev", ("--port", "0")), ("serve", ("--endpoint", "127.0.0.1:9")), ("worker", ()))
    ]
    help_without = env.run("durabletask", "langgraph", "dev", "--help", timeout=120)
    env.install("dtscale[langgraph]==0.1.0")
    return Installed(env, project, without, help_without)


@pytest.fixture(scope="module")
def installed(preparations: Preparations) -> Installed:
    found: Installed = preparations.result(_installed)
    return found


@pytest.fixture(scope="module")
def served(installed: Installed) -> Iterator[tuple[Process, str]]:
    args = ("durabletask", "langgraph", "dev", "--config", str(installed.project), "--port", "0")
    with Process(installed.env, *args, "--auth-token", TOKEN) as process:
        line = process.wait_for_line("LangGraph API on ", timeout=300)
        yield process, line.split()[3]


def test_without_the_extra_the_command_says_what_to_install(installed: Installed) -> None:
    for done in installed.without_extra:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "pip install 'dtscale[langgraph]'" in done.stderr, done.stderr
        assert "missing: langgraph" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (installed.project.parent / ".langgraph_dtscale").exists()  # it started nothing
    usage = installed.help_without_extra  # the command line itself works without the extra
    assert usage.returncode == 0 and "--auth-token" in usage.stdout, usage.stdout + usage.stderr


def test_the_extra_brings_what_the_server_needs(installed: Installed) -> None:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({d: m.version(d) for d in ('dtscale', 'dtscale-emulator', 'langgraph', 'langgraph-sdk',"
        " 'aiohttp')}))"
    )
    done = installed.env.python_code(code)
    assert done.returncode == 0, done.stderr
    versions = json.loads(done.stdout)
    assert versions["dtscale"] == versions["dtscale-emulator"] == "0.1.0", versions
    assert versions["langgraph-sdk"].startswith("0.4."), versions
    check = installed.env.run("python", "-m", "pip", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_installed_dev_command_serves_the_sdk(installed: Installed, served: tuple[Process, str]) -> None:
    process, url = served
    assert url.startswith("http://127.0.0.1:"), url  # dev binds this machine only by default
    done = installed.env.run("python", "-c", CLIENT, url, TOKEN, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr + "\n".join(process.lines)
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(seen["sdk_module"]).is_relative_to(installed.env.path), seen["sdk_module"]
    assert seen["ok"] == {"ok": True}
    assert seen["assistants"] == ["review"]
    events = [event for event, _ in seen["events"]]
    assert events[0] == "metadata" and "values" in events and "updates" in events, events
    updates = [data for event, data in seen["events"] if event == "updates"]
    assert {"write": {"draft": "a note on wheels"}} in updates, updates
    assert any("__interrupt__" in data for data in updates), updates
    assert seen["at_interrupt"] == {
        "values": {"topic": "wheels", "draft": "a note on wheels"},
        "next": ["review"],
        "interrupts": [{"question": "approve?", "draft": "a note on wheels"}],
    }
    expected = {"topic": "wheels", "draft": "a note on wheels", "verdict": "approved: a note on wheels"}
    assert seen["final"] == expected
    assert seen["after"] == {"values": expected, "next": []}
    assert seen["history"] >= 4, seen["history"]
    assert seen["thread"]["metadata"]["owner"] == "install-test" and seen["thread"]["status"] == "idle"
    assert seen["run_statuses"] == ["interrupted", "success"] or seen["run_statuses"] == ["success", "success"]


def test_the_installed_server_refuses_a_client_without_the_token(
    installed: Installed, served: tuple[Process, str]
) -> None:
    _, url = served
    code = (
        "import sys, urllib.request, urllib.error\n"
        "try:\n    urllib.request.urlopen(sys.argv[1] + '/info')\n"
        "except urllib.error.HTTPError as e:\n    print(e.code, e.read().decode())\n"
    )
    done = installed.env.run("python", "-c", code, url)
    assert done.stdout.startswith("401 ") and "missing bearer token" in done.stdout, done.stdout + done.stderr


def test_the_dev_command_stops_cleanly_on_sigterm(installed: Installed, served: tuple[Process, str]) -> None:
    process, _ = served
    process.proc.terminate()
    assert process.proc.wait(timeout=60) == 0, "\n".join(process.lines)
    assert not [line for line in process.lines if "Traceback" in line], "\n".join(process.lines)
    assert (installed.project.parent / ".langgraph_dtscale" / "state.db").exists()
