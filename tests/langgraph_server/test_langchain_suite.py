"""LangChain's own integration suite for its SDK, run unmodified against ``durabletask langgraph dev``.

The source distribution of ``langgraph-sdk`` 0.4.14 carries the suite (``tests/integration/``) and the project it
runs against (``integration/langgraph.json`` and its graphs: a streaming graph, a tools agent, a Deep Agent and a
factory). The server serves a copy of that project; the suite runs with ``pytest -m integration`` as LangChain runs
it, and every one of its tests must pass. Its ``test_remote_graph_v3.py`` hard-codes ``localhost:2024``, so when that
port is taken here the server and the suite run together in a network namespace of their own (loopback only).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.langgraph_server.support_server import ROOT, SUITE_PORT, in_private_network, port_is_free, read_junit

MIN_TESTS = 55  # the suite's size in 0.4.14


@pytest.mark.timeout(900)
def test_langchain_integration_suite_passes_in_full(langgraph_sdk_source: Path, tmp_path: Path) -> None:
    project = tmp_path / "integration"
    shutil.copytree(langgraph_sdk_source / "integration", project)
    junit, log = tmp_path / "suite.xml", tmp_path / "server.log"
    driver = [
        sys.executable,
        "-m",
        "tests.langgraph_server.support_server",
        "suite",
        "--sdk",
        str(langgraph_sdk_source),
        "--project",
        str(project),
        "--junit",
        str(junit),
        "--log",
        str(log),
    ]
    command = driver if port_is_free(SUITE_PORT) else in_private_network(driver)
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=840, check=False)
    server_log = log.read_text(errors="replace")[-4000:] if log.exists() else "(no server output)"
    assert junit.exists(), (
        f"the suite wrote no report (exit {run.returncode}):\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}\n{server_log}"
    )
    outcome = read_junit(junit)
    print(outcome.summary())
    assert outcome.total >= MIN_TESTS, f"only {outcome.total} tests ran:\n{outcome.summary()}\n{run.stdout[-3000:]}"
    assert outcome.passed == outcome.total, f"{outcome.summary()}\n--- server output ---\n{server_log}"
