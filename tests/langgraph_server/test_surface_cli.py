"""``durabletask langgraph dev | serve | worker`` as real processes: the token, CORS, the body limit, graphs and
factories run by the workers, data kept across a restart of ``dev``, an orderly stop on SIGTERM, and the
refusals of bad arguments and projects."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("langgraph_sdk.runtime")

import httpx

from durabletask.client import TaskHubGrpcClient
from durabletask.extensions.langgraph import DurableGraph
from durabletask.extensions.langgraph._server.config import load_config
from tests.langgraph_server.support_surface import Served, run_cli, run_cli_once, write_project

pytestmark = pytest.mark.timeout(600)
TOKEN = "dev-token-123"
ORIGIN = "https://app.example"
LIMIT = 65536
RUN_TIMEOUT = 120.0  # bounds a hung run only; nothing asserts on it


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("surface-project"))


def _dev_args(project: Path) -> list[str]:
    return [
        "langgraph",
        "dev",
        "--config",
        str(project),
        "--port",
        "0",
        "--auth-token",
        TOKEN,
        "--max-body-bytes",
        str(LIMIT),
    ]


@pytest.fixture(scope="module")
def dev(project: Path) -> Iterator[Served]:
    with run_cli(_dev_args(project)) as served:
        yield served


def _graph(project: Path, graph_id: str) -> Any:
    """The graph as a client holds it (a factory built for reading: the same topology)."""

    async def build() -> Any:
        async with load_config(project).graphs[graph_id].open("threads.read") as graph:
            return graph

    return asyncio.run(build())


def _hub(address: str) -> TaskHubGrpcClient:
    return TaskHubGrpcClient(host_address=address)


def test_dev_serves_ok_and_info_behind_the_token(dev: Served) -> None:
    assert dev.url.startswith("http://127.0.0.1:")  # bound to this machine only by default
    assert httpx.get(f"{dev.url}/ok").status_code == 401
    assert httpx.get(f"{dev.url}/ok", headers={"Authorization": "Bearer nope"}).status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{dev.url}/ok", headers=auth).json() == {"ok": True}
    assert httpx.get(f"{dev.url}/ok", params={"check_db": 1}, headers=auth).json() == {"ok": True}
    info = httpx.get(f"{dev.url}/info", headers=auth).json()
    assert info["graphs"] == ["echo", "factory"]


@pytest.mark.adversarial
def test_dev_applies_cors_and_the_body_limit(dev: Served) -> None:
    asked = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    preflight = httpx.options(f"{dev.url}/threads", headers=asked)
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    assert preflight.headers["access-control-allow-credentials"] == "true"
    evil = httpx.options(f"{dev.url}/threads", headers={**asked, "Origin": "https://evil.example"})
    assert evil.status_code == 403
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    too_big = httpx.post(f"{dev.url}/threads", content=b"{" + b" " * LIMIT + b"}", headers=auth)
    assert too_big.status_code == 413
    assert f"limit of {LIMIT} bytes" in too_big.json()["detail"]


def test_dev_runs_graphs_and_factories_as_langgraphs_server_does(dev: Served, project: Path) -> None:
    assert dev.hub is not None
    client = _hub(dev.hub)
    try:
        echo = DurableGraph(client, "echo", _graph(project, "echo"))
        out = echo.invoke({"text": "hi"}, {"configurable": {"thread_id": "keep-me"}}, timeout=RUN_TIMEOUT)
        assert out == {"text": "hi echoed"}
        factory = DurableGraph(client, "factory", _graph(project, "factory"))
        config = {"configurable": {"thread_id": "f-1"}}
        made = factory.invoke({"text": "hi"}, config, context={"user": "ann"}, timeout=RUN_TIMEOUT)
        # the node the worker ran came from a build for this run: execution runtime, its config, its context
        assert made == {
            "text": "hi echoed",
            "access_context": "threads.create_run",
            "is_for_execution": True,
            "thread": "f-1",
            "user": "ann",
        }
        factory.invoke(
            {"text": ""}, {"configurable": {"thread_id": "f-2"}}, context={"remember": "k1"}, timeout=RUN_TIMEOUT
        )
    finally:
        client.close()
    # a factory's runtime.store on the worker is the store of /store/items
    item = httpx.get(
        f"{dev.url}/store/items",
        params={"namespace": "surface", "key": "k1"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert item.status_code == 200, item.text
    assert item.json()["value"] == {"thread": "f-2"}


@pytest.mark.adversarial
def test_a_second_dev_on_the_same_project_or_port_is_refused(dev: Served, project: Path) -> None:
    assert (project.parent / ".langgraph_dtscale" / ".gitignore").read_text().splitlines()[-1] == "*"
    same_state = run_cli_once(["langgraph", "dev", "--config", str(project), "--port", "0"])
    assert same_state.returncode == 1
    assert "state.db" in same_state.stderr and "already served by another emulator" in same_state.stderr
    port = dev.url.rsplit(":", 1)[1]
    other = write_project(project.parent.parent / "other-project")
    busy = run_cli_once(["langgraph", "dev", "--config", str(other), "--port", port])
    assert busy.returncode == 1 and "durabletask langgraph dev:" in busy.stderr and port in busy.stderr
    assert "Traceback" not in same_state.stderr + busy.stderr


def test_dev_keeps_its_data_across_a_restart_and_stops_in_order(dev: Served, project: Path) -> None:
    # the last test of the module's `dev`: it stops it
    assert dev.hub is not None
    client = _hub(dev.hub)
    try:
        echo = DurableGraph(client, "echo", _graph(project, "echo"))
        echo.invoke({"text": "before"}, {"configurable": {"thread_id": "restart"}}, timeout=RUN_TIMEOUT)
    finally:
        client.close()
    # a client holds an event stream open (a joined thread): the stop cuts it after a short grace, not waits on it
    auth = {"Authorization": f"Bearer {TOKEN}"}
    thread = httpx.post(f"{dev.url}/threads", json={}, headers=auth).json()["thread_id"]
    opened = threading.Event()

    def hold_stream() -> None:
        with (
            contextlib.suppress(httpx.HTTPError),
            httpx.stream("GET", f"{dev.url}/threads/{thread}/stream", headers=auth, timeout=None) as stream,
        ):
            opened.set()
            for _ in stream.iter_raw():
                pass

    holder = threading.Thread(target=hold_stream, daemon=True)
    holder.start()
    assert opened.wait(RUN_TIMEOUT)
    assert dev.stop() == 0  # SIGTERM: the server, the workers and the emulator stop, and it exits cleanly
    holder.join(RUN_TIMEOUT)
    assert not holder.is_alive()
    assert (project.parent / ".langgraph_dtscale" / "state.db").is_file()
    with run_cli(_dev_args(project)) as again:
        assert again.hub is not None
        client = _hub(again.hub)
        try:
            echo = DurableGraph(client, "echo", _graph(project, "echo"))
            state = echo.get_state({"configurable": {"thread_id": "restart"}})
            assert state.values == {"text": "before echoed"}
            out = echo.invoke({"text": " after"}, {"configurable": {"thread_id": "restart"}}, timeout=RUN_TIMEOUT)
            assert out == {"text": " after echoed"}
        finally:
            client.close()
        assert again.stop() == 0


def test_dev_reloads_a_changed_graph_on_the_same_address(tmp_path: Path) -> None:
    config = {
        "dependencies": ["."],
        "graphs": {"echo": "./graphs.py:graph", "env": "./graphs.py:env_graph"},
        "env": ".env",
    }
    (tmp_path / "reloading").mkdir()
    (tmp_path / "reloading" / ".env").write_text("SURFACE_RELOAD_VAR=first\n")
    project = write_project(tmp_path / "reloading", config)
    graphs = project.parent / "graphs.py"
    with run_cli(["langgraph", "dev", "--config", str(project), "--port", "0"]) as dev:

        def run(text: str) -> Any:
            body = {"assistant_id": "echo", "input": {"text": text}}
            return httpx.post(f"{dev.url}/runs/wait", json=body, timeout=RUN_TIMEOUT)

        assert run("a").json() == {"text": "a echoed"}
        graphs.write_text(graphs.read_text().replace('" echoed"', '" reloaded"'))
        dev.wait_for("graphs.py changed: reloading the project")
        assert dev.url in dev.wait_for("LangGraph API on")  # the same address
        assert run("b").json() == {"text": "b reloaded"}
        # a change that breaks the project is shown, and the next one that mends it is served
        graphs.write_text(graphs.read_text() + "\ndef broken(:\n")
        dev.wait_for("waiting for a change to reload")
        shown = "".join(dev.lines[-5:])
        assert "graphs.echo: importing ./graphs.py failed: SyntaxError" in shown, shown
        graphs.write_text(graphs.read_text().replace("\ndef broken(:\n", "\n"))
        dev.wait_for("LangGraph API on")
        assert run("c").json() == {"text": "c reloaded"}
        # the .env file: its new value replaces the one the project set before
        env = httpx.post(f"{dev.url}/runs/wait", json={"assistant_id": "env", "input": {}}, timeout=RUN_TIMEOUT)
        assert env.json() == {"text": "first"}
        (project.parent / ".env").write_text("SURFACE_RELOAD_VAR=second\n")
        dev.wait_for(".env changed: reloading the project")
        dev.wait_for("LangGraph API on")
        env = httpx.post(f"{dev.url}/runs/wait", json={"assistant_id": "env", "input": {}}, timeout=RUN_TIMEOUT)
        assert env.json() == {"text": "second"}
        assert dev.stop(signal.SIGINT) == 0  # Ctrl-C stops it in order too


def test_serve_and_worker_as_separate_processes(project: Path) -> None:
    emulator_args = ["--port", "0", "--in-memory", "--no-dashboard"]
    with run_cli(emulator_args, module="dtscale_emulator", ready="listening on") as emulator:
        assert emulator.hub is not None
        hub = ["--endpoint", emulator.hub, "--taskhub", "default"]
        with run_cli(["langgraph", "worker", "--config", str(project), *hub], ready="LangGraph workers for") as _w:
            # managed DTS's connection string, as the scheduler's emulator takes it (no credential)
            managed = f"Endpoint=http://{emulator.hub};Authentication=None;TaskHub=default"
            serve = ["langgraph", "serve", "--config", str(project), "--port", "0", "--connection-string", managed]
            with run_cli(serve) as served:
                assert httpx.get(f"{served.url}/ok", params={"check_db": 1}).json() == {"ok": True}
                assert httpx.get(f"{served.url}/info").json()["task_hub"] == "default"
                # LangChain's suite's factory check, over HTTP: the server and the worker are separate processes
                waited = httpx.post(
                    f"{served.url}/runs/wait",
                    json={"assistant_id": "factory", "input": {"text": "hi"}},
                    timeout=RUN_TIMEOUT,
                )
                assert waited.status_code == 200, waited.text
                assert waited.json()["access_context"] == "threads.create_run"
                assert waited.json()["is_for_execution"] is True
                client = _hub(emulator.hub)
                try:
                    factory = DurableGraph(client, "factory", _graph(project, "factory"))
                    out = factory.invoke({"text": "x"}, {"configurable": {"thread_id": "s-1"}}, timeout=RUN_TIMEOUT)
                    assert (out["text"], out["access_context"]) == ("x echoed", "threads.create_run")
                finally:
                    client.close()
                assert served.stop() == 0
            assert _w.stop() == 0


@pytest.mark.adversarial
def test_bad_arguments_and_projects_are_refused_clearly(tmp_path: Path, project: Path) -> None:
    given = run_cli_once(["langgraph", "dev", "--config", str(project), "--endpoint", "elsewhere:1"])
    assert given.returncode == 2 and "--endpoint does not apply to dev" in given.stderr
    empty = run_cli_once(["langgraph", "dev", "--config", str(project), "--auth-token", " "])
    assert empty.returncode == 2 and "--auth-token must be a non-empty token" in empty.stderr
    for grace in ("-1", "nan"):
        odd = run_cli_once(["langgraph", "worker", "--config", str(project), "--stop-grace", grace])
        assert odd.returncode == 2 and "--stop-grace must be between 0 and 3600 seconds" in odd.stderr
    bad = write_project(
        tmp_path / "bad", {"graphs": {"g": "./graphs.py:graph"}, "http": {"cors": {"allow_origins": 1}}}
    )
    refused = run_cli_once(["langgraph", "serve", "--config", str(bad)])
    assert refused.returncode == 1 and "http.cors.allow_origins must be a list of strings" in refused.stderr
    broken = write_project(tmp_path / "broken", {"graphs": {"g": "./graphs.py:nothing_here"}})
    failed = run_cli_once(["langgraph", "worker", "--config", str(broken)])
    assert failed.returncode == 1 and "graphs.g" in failed.stderr and "no attribute 'nothing_here'" in failed.stderr
    missing = run_cli_once(["langgraph", "dev", "--config", str(tmp_path / "nowhere.json")])
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    connection = run_cli_once(["langgraph", "serve", "--config", str(project), "--connection-string", "Endpoint"])
    assert connection.returncode == 1 and "durabletask langgraph serve:" in connection.stderr
    assert "Traceback" not in connection.stderr + failed.stderr + refused.stderr


@pytest.mark.adversarial
def test_without_the_extra_the_command_says_what_to_install(project: Path) -> None:
    hide = "import sys; sys.modules['langgraph_sdk'] = None; sys.modules['aiohttp'] = None; "
    run = "from durabletask.cli import main; raise SystemExit(main(sys.argv[1:]))"
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", hide + run, "langgraph", "dev", "--config", str(project)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "pip install 'dtscale[langgraph]'" in done.stderr
    assert "missing: langgraph_sdk, aiohttp" in done.stderr
    helped = subprocess.run(
        [sys.executable, "-c", hide + run, "langgraph", "--help"], capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and "dev" in helped.stdout and "worker" in helped.stdout


def test_the_project_files_are_what_the_tests_say(project: Path) -> None:
    assert json.loads(project.read_text())["graphs"] == {
        "echo": "./graphs.py:graph",
        "factory": "./graphs.py:make_graph",
    }
