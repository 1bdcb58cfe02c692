"""samples/langgraph_server runs as its docstring says: ``durabletask langgraph dev`` serves the project, and the
client (langgraph_sdk) streams, is interrupted, resumes and cancels."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.langgraph_server.support_server import ROOT, dev_server, free_port

SAMPLE = ROOT / "samples" / "langgraph_server"
EXPECTED = [
    "assistants: ['support']",
    "streamed 16 tokens: Refunds are accepted within 30 days of delivery, and each one is approved by a person.",
    "interrupted: {'question': 'Approve this refund?', 'order': 42}",
    "waiting in node ['approve']",
    "resumed: Done: order 42 refunded",
    "report under way: section 1",
    "cancelled: run status interrupted",
    "thread status idle",
]


@pytest.mark.timeout(400)
def test_the_sample_client_streams_interrupts_resumes_and_cancels(tmp_path: Path) -> None:
    project = tmp_path / "langgraph_server"
    # A copy: `dev` keeps its data under the project, and the checkout stays clean.
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", ".langgraph_dtscale"))
    port = free_port()
    with dev_server(project / "langgraph.json", port, tmp_path / "server.log") as server:
        run = subprocess.run(
            [sys.executable, str(project / "client.py"), "--url", f"http://127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        log = server.tail(60)
    print(run.stdout)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr[-4000:]}\n--- server ---\n{log}"
    missing = [line for line in EXPECTED if line not in run.stdout]
    assert not missing, f"missing {missing} in:\n{run.stdout}\n--- server ---\n{log}"
