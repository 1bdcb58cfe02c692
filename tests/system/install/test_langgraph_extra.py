"""``dtscale[langgraph]`` installed from this checkout's wheels into a fresh venv runs a LangGraph graph durably.

The extra brings LangGraph from the package registry, as it does for users; the same graph then runs through
``DurableGraph`` on the emulator the venv embeds and through plain LangGraph with an ``InMemorySaver``, and both give
the same results at the interrupt and after the resume. In CI a registry that does not answer fails the test;
elsewhere it skips and says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from tests.system.install.support import Preparations, Wheels, make_venv, prepared_early

SCRIPT = Path(__file__).resolve().parent / "scripts" / "langgraph_graph.py"

pytestmark = pytest.mark.timeout(900)


@prepared_early
def _langgraph(wheels: Wheels, folder: Path) -> dict[str, Any]:
    env = make_venv(folder / "venv", ["dtscale[langgraph]==0.1.0"], wheels)
    done = env.run("python", str(SCRIPT), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    found["site_packages"] = str(env.site_packages)
    return found


@pytest.fixture(scope="module")
def outcome(preparations: Preparations) -> dict[str, Any]:
    found: dict[str, Any] = preparations.result(_langgraph)
    return found


def test_the_extra_brings_langgraph_1_2_from_the_registry(outcome: dict[str, Any]) -> None:
    versions = outcome["distributions"]
    assert Version("1.2") <= Version(versions["langgraph"]) < Version("1.3"), versions
    assert versions["dtscale"] == versions["dtscale-emulator"] == "0.1.0"
    assert versions["durabletask"] is None  # Microsoft's SDK is not needed, and nothing pulled it in
    site = Path(outcome["site_packages"])
    assert Path(outcome["durabletask_module"]).parent == site / "durabletask"
    assert Path(outcome["langgraph_module"]).is_relative_to(site / "langgraph")


def test_the_graph_gives_plain_langgraphs_results_from_the_installed_wheels(outcome: dict[str, Any]) -> None:
    at_interrupt, finished = outcome["durable"]
    assert outcome["durable"] == outcome["plain"]
    assert at_interrupt["interrupts"] and "verdict" not in at_interrupt
    assert finished["verdict"] == "approved: 3 drafts" and not finished["interrupts"]
