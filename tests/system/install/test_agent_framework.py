"""Microsoft Agent Framework's Durable Task integration runs unchanged on our SDK, installed as the docs say.

A fresh venv gets this checkout's wheels, the integration's own requirements apart from Microsoft's SDK, and
``agent-framework-durabletask`` with ``--no-deps``. samples/agent_framework_agents.py then runs there on the emulator
it embeds: a durable agent with a tool, an orchestration over two agents, a human-in-the-loop approval, a
workflow that routes to an agent and pauses for a review, and a worker killed mid-run whose replacement repeats
no completed model call. The venv is built once a session.

The integration comes from the package registry: in CI a registry that does not answer fails the test;
elsewhere the test skips and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.conftest import running_in_ci
from tests.system.install._agents_env import (
    INTEGRATION,
    INTEGRATION_VERSION,
    OTHER_REQUIREMENTS,
    REPLACED,
    ROOT,
    AgentsEnv,
    RegistryUnreachableError,
    create_agents_env,
    download_integration,
    requires_dist,
)
from tests.system.install.support import Preparations, Wheels, prepared_early

pytestmark = [
    pytest.mark.timeout(900),  # the first build of the venv downloads Agent Framework and its requirements
    pytest.mark.local_only("builds its own venv and runs the sample on the emulator the sample embeds"),
]

SAMPLE_FILES = ("agent_framework_agents.py", "_scripted_chat.py", "_support.py")
# What each scenario of the sample must print in its section (its lines after "-- <title>").
SCENARIOS = {
    "a durable agent with a tool": [
        "weather agent: Oslo: light rain and 7 degrees.",
        "keeps the conversation: DurableAgentStateTextContent, DurableAgentStateFunctionCallContent, "
        "DurableAgentStateFunctionResultContent, DurableAgentStateTextContent",
        "model calls: 2 served, each once",
    ],
    "an orchestration over two agents": [
        'trip-oslo: COMPLETED {"forecast": "Oslo: light rain and 7 degrees.", "plan": "Oslo: morning at the fjord',
        "model calls: 3 served, each once",
    ],
    "human in the loop": [
        "approval-oslo: draft waiting for approval",
        "approval-oslo: revised draft waiting for approval",
        'approval-oslo: COMPLETED {"status": "approved", "by": "alice", "rounds": 2, "plan": "Oslo: Munch museum',
        "the planner revised with 2 earlier messages in its conversation",
        "model calls: 2 served, each once",
    ],
    "a workflow with routing and a review": [
        "desk-forecast: desk asks for a review",
        "desk-forecast: output ['Oslo: light rain and 7 degrees. (published, approved by bob)']",
        "desk-plan: desk asks for a review",
        "desk-plan: output ['Oslo: morning at the fjord, lunch at the harbour, evening concert. (published, approved",
        "model calls: 3 served, each once",
    ],
    "recovery from a killed worker": [
        "with SIGKILL during the planner's model call",
        'trip-bergen: COMPLETED {"forecast": "Bergen: clear skies and 11 degrees.", "plan": "Bergen:',
        "planner  'plan a day in Bergen'   step 0: 2 / 1 (start in first worker, start in second worker, "
        "served in second worker)",
        "weather  'forecast for Bergen'    step 0: 1 / 1 (start in first worker, served in first worker)",
        "weather  'forecast for Bergen'    step 1: 1 / 1 (start in first worker, served in first worker)",
        "no completed model call was repeated; only the interrupted one ran again",
    ],
}


def registry_unreachable(reason: str) -> NoReturn:
    """CI must reach the registry; a developer's machine without it skips, saying why."""
    if running_in_ci():
        pytest.fail(f"{reason}\nCI must reach the package registry to test the Agent Framework install")
    pytest.skip(f"{reason} (the Agent Framework install test needs the package registry)")


@prepared_early
def _agents(wheels: Wheels, folder: Path) -> AgentsEnv:
    try:
        return create_agents_env(folder, wheels)
    except RegistryUnreachableError as exc:
        registry_unreachable(str(exc))


@pytest.fixture(scope="session")
def agents_env(preparations: Preparations) -> AgentsEnv:
    found: AgentsEnv = preparations.result(_agents)
    return found


@pytest.fixture(scope="session")
def sample_run(agents_env: AgentsEnv, tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    # A copy outside the checkout: the samples put their parent folder on sys.path, which in the checkout
    # would import durabletask from the source tree instead of the installed wheel.
    samples = tmp_path_factory.mktemp("agents-sample") / "samples"
    samples.mkdir()
    for name in SAMPLE_FILES:
        shutil.copy2(ROOT / "samples" / name, samples / name)
    env = {k: v for k, v in os.environ.items() if k not in {"DURABLETASK_CONNECTION_STRING", "PYTHONPATH"}}
    return subprocess.run(
        [str(agents_env.python), "agent_framework_agents.py"],
        cwd=samples, env=env, capture_output=True, text=True, timeout=300,
    )


def _section(run: subprocess.CompletedProcess[str], title: str) -> str:
    sections = {}
    for part in run.stdout.split("\n-- ")[1:]:
        head, _, body = part.partition("\n")
        sections[head] = body
    assert title in sections, f"the sample printed no section {title!r}:\n{run.stdout}\n{run.stderr[-3000:]}"
    return sections[title]


def test_an_unreachable_registry_fails_in_ci_and_skips_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RegistryUnreachableError) as unreachable:
        download_integration(tmp_path, index="http://127.0.0.1:9/simple")  # nothing listens on the discard port
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must reach the package registry"):
        registry_unreachable(str(unreachable.value))
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=INTEGRATION):
        registry_unreachable(str(unreachable.value))


def test_the_documented_install_names_every_other_requirement(agents_env: AgentsEnv) -> None:
    def key(r: Requirement) -> tuple[str, SpecifierSet, str]:
        return (r.name, r.specifier, str(r.marker))

    declared = {key(r) for r in requires_dist(agents_env.integration_wheel) if r.name not in REPLACED}
    documented = {key(Requirement(text)) for text in OTHER_REQUIREMENTS}
    assert declared == documented, "the integration's requirements changed: update OTHER_REQUIREMENTS and the docs"
    docs = (ROOT / "docs" / "agent-framework.md").read_text(encoding="utf-8")
    for text in (*OTHER_REQUIREMENTS, f"pip install --no-deps {INTEGRATION}=={INTEGRATION_VERSION}"):
        assert text in docs, f"docs/agent-framework.md does not show {text!r}"


def test_durabletask_is_our_sdk_and_microsofts_is_not_installed(agents_env: AgentsEnv) -> None:
    probe = (
        "import importlib.metadata as m, json, durabletask, durabletask.azuremanaged, agent_framework_durabletask\n"
        "print(json.dumps({'dists': sorted(d.metadata['Name'] for d in m.distributions()),\n"
        "  'owner': m.packages_distributions().get('durabletask'), 'file': durabletask.__file__,\n"
        "  'integration': m.version('agent-framework-durabletask')}))\n"
    )
    proc = subprocess.run(
        [str(agents_env.python), "-c", probe], capture_output=True, text=True, timeout=60, cwd=agents_env.python.parent
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert not REPLACED & {name.lower() for name in found["dists"]}, found["dists"]
    assert {"dtscale", "dtscale-emulator", INTEGRATION} <= set(found["dists"])
    assert found["owner"] == ["dtscale"] and found["integration"] == INTEGRATION_VERSION
    assert Path(found["file"]).is_relative_to(agents_env.python.parents[1])


def test_the_sample_completes_every_scenario(sample_run: subprocess.CompletedProcess[str]) -> None:
    assert sample_run.returncode == 0, f"{sample_run.stdout}\n{sample_run.stderr[-4000:]}"
    assert "all scenarios completed as expected" in sample_run.stdout
    assert "Traceback" not in sample_run.stderr, sample_run.stderr[-4000:]


@pytest.mark.parametrize("title", list(SCENARIOS))
def test_scenario(title: str, sample_run: subprocess.CompletedProcess[str]) -> None:
    printed = _section(sample_run, title)
    for line in SCENARIOS[title]:
        assert line in printed, f"{title}: the sample did not print {line!r}:\n{printed}"
