"""Scale-out: one emulator, two ``durabletask langgraph serve`` processes and three ``durabletask langgraph worker``
processes, sharing nothing but the task hub. A run started through one server is streamed, joined and cancelled
through the other."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.langgraph_server.support_server import ServerProcess, cli, free_port
from tests.support.reliability import kill, start_emulator

GRAPH = """
import os
import time
from typing import TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph

from durabletask.extensions.langgraph import heartbeat


class State(TypedDict, total=False):
    sections: int
    written: list[int]


def write(state: State) -> State:
    emit = get_stream_writer()
    for section in range(1, state["sections"] + 1):
        heartbeat()
        emit({"section": section, "pid": os.getpid()})
        time.sleep(0.1)
    return {"written": list(range(1, state["sections"] + 1))}


builder = StateGraph(State)
builder.add_node("write", write)
builder.add_edge(START, "write")
builder.add_edge("write", END)
graph = builder.compile()
"""


@dataclass
class Cluster:
    """Two servers in front of three workers and one emulator."""

    urls: tuple[str, str]
    workers: list[ServerProcess]
    servers: list[ServerProcess]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "sections.py").write_text(GRAPH)
    config = project / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"sections": "./sections.py:graph"}}))
    port = free_port()
    emulator = start_emulator(tmp_path / "hub.db", port)
    hub = ["--endpoint", f"127.0.0.1:{port}", "--taskhub", "default"]
    urls: list[str] = []
    workers: list[ServerProcess] = []
    servers: list[ServerProcess] = []
    try:
        with ExitStack() as processes:
            for n in range(3):
                command = cli("langgraph", "worker", "--config", str(config), *hub)
                workers.append(ServerProcess(command, None, tmp_path / f"worker-{n}.log", cwd=project).start())
                processes.callback(workers[-1].stop)
            for n in range(2):
                http = free_port()
                command = cli("langgraph", "serve", "--config", str(config), *hub, "--port", str(http))
                url = f"http://127.0.0.1:{http}"
                servers.append(ServerProcess(command, url, tmp_path / f"server-{n}.log", cwd=project).start())
                processes.callback(servers[-1].stop)
                urls.append(url)
            yield Cluster((urls[0], urls[1]), workers, servers)
    finally:
        kill(emulator, signal.SIGTERM)


@pytest.mark.timeout(400)
def test_a_run_started_on_one_server_is_streamed_joined_and_cancelled_on_the_other(cluster: Cluster) -> None:
    with get_sync_client(url=cluster.urls[0]) as first, get_sync_client(url=cluster.urls[1]) as second:
        _start_stream_join_and_cancel_across(first, second)


def _start_stream_join_and_cancel_across(first: SyncLangGraphClient, second: SyncLangGraphClient) -> None:
    thread = first.threads.create()
    assert second.threads.get(thread["thread_id"])["thread_id"] == thread["thread_id"]

    run = first.runs.create(
        thread["thread_id"], "sections", input={"sections": 5}, stream_mode=["values", "custom"], stream_resumable=True
    )
    assert second.runs.get(thread["thread_id"], run["run_id"])["run_id"] == run["run_id"]
    streamed: list[Any] = [
        part.data
        for part in second.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1")
        if part.event == "custom"
    ]
    assert [chunk["section"] for chunk in streamed] == [1, 2, 3, 4, 5]
    assert second.runs.join(thread["thread_id"], run["run_id"]) == {"sections": 5, "written": [1, 2, 3, 4, 5]}
    assert first.runs.get(thread["thread_id"], run["run_id"])["status"] == "success"

    long = first.runs.create(
        thread["thread_id"],
        "sections",
        input={"sections": 3000},
        stream_mode=["values", "custom"],
        stream_resumable=True,
    )
    seen = []
    for part in second.runs.join_stream(thread["thread_id"], long["run_id"], last_event_id="-1"):
        if part.event == "custom":
            seen.append(part.data["section"])
            if len(seen) == 2:
                break
    second.runs.cancel(thread["thread_id"], long["run_id"], wait=True)
    assert first.runs.get(thread["thread_id"], long["run_id"])["status"] == "interrupted"
    # The cancelled run's stream has ended, wherever it is joined.
    rest = [
        p.data["section"]
        for p in first.runs.join_stream(thread["thread_id"], long["run_id"], last_event_id="-1")
        if p.event == "custom"
    ]
    assert rest[:2] == [1, 2] and len(rest) < 3000
    assert first.threads.get(thread["thread_id"])["status"] == "idle"
    # The cancelled run's node never finished: the thread keeps what the first run wrote.
    assert second.threads.get_state(thread["thread_id"])["values"]["written"] == [1, 2, 3, 4, 5]


@pytest.mark.timeout(400)
def test_a_run_goes_on_when_the_worker_running_its_node_is_killed(cluster: Cluster) -> None:
    with get_sync_client(url=cluster.urls[0]) as first, get_sync_client(url=cluster.urls[1]) as second:
        thread = first.threads.create()
        run = first.runs.create(
            thread["thread_id"], "sections", input={"sections": 20}, stream_mode=["custom"], stream_resumable=True
        )
        killed, attempts, pids = None, [], set()
        for part in second.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1"):
            if part.event == "metadata":
                attempts.append(part.data["attempt"])
            elif part.event == "custom":
                pids.add(part.data["pid"])
                if killed is None:
                    killed = next(w for w in cluster.workers if w.process and w.process.pid == part.data["pid"])
                    killed.kill()  # SIGKILL, in the middle of the node
        assert killed is not None and killed.process is not None
        # The node ran again on another worker, and the stream said so with the run's new attempt.
        assert pids - {killed.process.pid}, pids
        assert attempts[0] == 1 and max(attempts) >= 2, attempts
        assert first.runs.join(thread["thread_id"], run["run_id"])["written"] == list(range(1, 21))
        assert second.runs.get(thread["thread_id"], run["run_id"])["status"] == "success"


@pytest.mark.timeout(400)
def test_a_stream_cut_by_a_dying_server_resumes_on_the_other_with_last_event_id(cluster: Cluster) -> None:
    with get_sync_client(url=cluster.urls[0]) as first, get_sync_client(url=cluster.urls[1]) as second:
        thread = first.threads.create()
        run = first.runs.create(
            thread["thread_id"], "sections", input={"sections": 20}, stream_mode=["custom"], stream_resumable=True
        )
        before: list[tuple[str, Any, str | None]] = []
        with pytest.raises(httpx.TransportError):  # the server is gone: its connection ends and it refuses new ones
            for part in first.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1"):
                before.append((part.event, part.data, part.id))
                if part.event == "custom" and part.data["section"] == 3:
                    cluster.servers[0].kill()  # SIGKILL mid-stream
        last_id = next(i for _, _, i in reversed(before) if i is not None)
        after = [
            (p.event, p.data, p.id)
            for p in second.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id=last_id)
        ]
        whole = [
            (p.event, p.data, p.id)
            for p in second.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1")
        ]
        assert before + after == whole
        assert [d["section"] for e, d, _ in whole if e == "custom"] == list(range(1, 21))
        cluster.servers[0].start()  # the same server, restarted: it serves the thread as before
        assert first.runs.get(thread["thread_id"], run["run_id"])["status"] == "success"
