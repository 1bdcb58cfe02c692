"""Helpers of the surface tests: a small ``langgraph.json`` project, and ``durabletask langgraph`` as a process."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 120.0  # a loaded machine imports LangGraph slowly; no assertion depends on this time
STOP_TIMEOUT = 60.0

GRAPHS_PY = '''
"""Graphs of the surface tests: a compiled one, and factories of every shape LangGraph's server calls."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph_sdk.runtime import ServerRuntime


class State(TypedDict, total=False):
    text: str
    access_context: str
    is_for_execution: bool
    thread: str
    user: str


def _build(extra):
    def echo(state: State) -> State:
        return {"text": (state.get("text") or "") + " echoed", **extra}

    builder = StateGraph(State)
    builder.add_node("echo", echo)
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    return builder.compile()


graph = _build({})


def _from_env(state: State) -> State:
    import os

    return {"text": os.environ.get("SURFACE_RELOAD_VAR", "unset")}


env_graph = StateGraph(State)
env_graph.add_node("read", _from_env)
env_graph.add_edge(START, "read")
env_graph = env_graph.compile()
uncompiled = StateGraph(State)
uncompiled.add_node("echo", lambda state: {"text": "plain"})
uncompiled.add_edge(START, "echo")


async def make_graph(config: RunnableConfig, runtime: ServerRuntime):
    from langgraph_sdk.runtime import _ExecutionRuntime, _ReadRuntime

    if not isinstance(runtime, (_ExecutionRuntime, _ReadRuntime)):
        raise TypeError(f"factory must receive a ServerRuntime, got {type(runtime).__name__}")
    if not isinstance(runtime.store, BaseStore):
        raise TypeError(f"runtime.store must be a BaseStore, got {type(runtime.store).__name__}")
    execution = runtime.execution_runtime
    context = execution.context if execution is not None else None
    if isinstance(context, dict) and context.get("remember"):
        # the factory's runtime.store, written while the run's node is built: the server's own store
        runtime.store.put(("surface",), context["remember"], {"thread": config["configurable"]["thread_id"]})
    return _build({
        "access_context": runtime.access_context,
        "is_for_execution": execution is not None,
        "thread": config.get("configurable", {}).get("thread_id", ""),
        "user": (context or {}).get("user", "") if isinstance(context, dict) else "",
    })


def no_args():
    return _build({"access_context": "none"})


def config_only(config):
    return _build({"thread": config.get("configurable", {}).get("thread_id", "")})


def runtime_only(runtime):
    return _build({"access_context": runtime.access_context})


@contextlib.asynccontextmanager
async def managed(runtime):
    OPENED.append(runtime.access_context)
    try:
        yield _build({"access_context": runtime.access_context})
    finally:
        CLOSED.append(runtime.access_context)


OPENED: list[str] = []
CLOSED: list[str] = []


def failing(config):
    raise RuntimeError("no model key in this environment")


def three(a, b, c):
    return graph


not_a_graph = 42
'''


def write_project(folder: Path, config: dict[str, Any] | None = None) -> Path:
    """A project in ``folder``: ``graphs.py`` and a ``langgraph.json`` (``config`` replaces the default one)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "graphs.py").write_text(GRAPHS_PY)
    config = config or {
        "dependencies": ["."],
        "graphs": {"echo": "./graphs.py:graph", "factory": "./graphs.py:make_graph"},
        "env": {"SURFACE_TEST_VAR": "from-config"},
        "http": {"cors": {"allow_origins": ["https://app.example"], "allow_credentials": True}},
    }
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


@dataclass
class Served:
    """A running ``durabletask langgraph`` process and what it printed."""

    process: subprocess.Popen[str]
    url: str
    hub: str | None
    lines: list[str] = field(default_factory=list)
    pending: queue.Queue[str | None] | None = None

    def wait_for(self, text: str) -> str:
        """The next line of output holding ``text`` (the lines before it are kept in ``lines``)."""
        assert self.pending is not None
        while True:
            line = self.pending.get(timeout=STARTUP_TIMEOUT)
            if line is None:
                raise AssertionError(f"the process ended before printing {text!r}:\n{''.join(self.lines)}")
            self.lines.append(line)
            if text in line:
                return line

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """SIGTERM (or ``sig``: SIGINT is Ctrl-C), then the exit code (it must stop by itself, in order)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=STOP_TIMEOUT)


def _reader(stream: Any, into: queue.Queue[str | None]) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


@contextmanager
def run_cli(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    ready: str = "LangGraph API on",
    module: str = "durabletask.cli",
) -> Iterator[Served]:
    """``python -m <module> <args>`` as a process, once it printed its ready line; stopped (SIGTERM) at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        while True:
            line = lines.get(timeout=STARTUP_TIMEOUT)
            if line is None:
                raise AssertionError(f"durabletask {' '.join(args)} exited before it was ready:\n{''.join(seen)}")
            seen.append(line)
            if ready in line:
                break
        url = re.search(r"https?://[^\s)]+", line)
        hub = re.search(r"(?:task hub on|listening on) (\S+)", line)
        served = Served(process, url.group(0) if url else "", hub.group(1) if hub else None, seen, lines)
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=STOP_TIMEOUT)  # it reads to the end of the output once the process is gone
        if process.stdout is not None:
            process.stdout.close()


def run_cli_once(args: Sequence[str], *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``durabletask <args>`` to its end (a command that refuses its arguments)."""
    return subprocess.run(
        [sys.executable, "-m", "durabletask.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=STARTUP_TIMEOUT,
    )
