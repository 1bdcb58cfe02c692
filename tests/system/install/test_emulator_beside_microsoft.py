"""The emulator's wheel beside Microsoft's SDK: it writes none of the SDK's files, and the SDK runs on it.

One venv for the module: Microsoft's ``durabletask`` and ``durabletask-azuremanaged`` 1.12.0 from PyPI, then
this checkout's ``dtscale-emulator[dashboard]`` wheel. The SDK's workflow runs against the emulator in another
process and in its own process (both sets of protocol stubs loaded at once), and the dashboard shows it.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.system.install.support import (
    Preparations,
    Process,
    Venv,
    Wheels,
    distribution_files,
    emulator_address,
    make_venv,
    prepared_early,
)

MICROSOFT = ("durabletask==1.12.0", "durabletask-azuremanaged==1.12.0")
MICROSOFT_METADATA = ("durabletask-1.12.0.dist-info", "durabletask_azuremanaged-1.12.0.dist-info")
WORKFLOW = Path(__file__).resolve().parent / "scripts" / "workflow.py"
GREETED = ["Hello, Tokyo!", "Hello, Lima!"]

pytestmark = pytest.mark.timeout(900)


@dataclass(frozen=True)
class Beside:
    env: Venv
    before: dict[str, str]  # Microsoft's files and their hashes, before the emulator's wheel was installed
    after: dict[str, str]


@prepared_early
def _beside(wheels: Wheels, folder: Path) -> Beside:
    env = make_venv(folder / "venv", MICROSOFT, wheels)
    site = env.site_packages
    before = distribution_files(site, MICROSOFT_METADATA)
    env.install(f"{wheels.emulator}[dashboard]")
    return Beside(env, before, distribution_files(site, MICROSOFT_METADATA))


@pytest.fixture(scope="module")
def beside(preparations: Preparations) -> Beside:
    found: Beside = preparations.result(_beside)
    return found


def _workflow(env: Venv, *args: str) -> dict[str, Any]:
    done = env.run("python", str(WORKFLOW), *args, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


def _ran_on_microsofts_sdk(outcome: dict[str, Any], env: Venv) -> None:
    assert outcome["status"] == "COMPLETED" and outcome["output"] == GREETED, outcome
    assert outcome["distributions"] == {
        "durabletask": "1.12.0", "durabletask-azuremanaged": "1.12.0", "dtscale": None, "dtscale-emulator": "0.1.0"
    }
    assert Path(outcome["client_module"]).parent == env.site_packages / "durabletask"


def test_the_emulator_changes_no_file_of_microsofts_sdk(beside: Beside) -> None:
    assert len(beside.before) > 80, sorted(beside.before)  # both distributions' files were found
    assert any(path.startswith("durabletask/azuremanaged/") for path in beside.before)
    changed = {p for p in beside.before.keys() | beside.after.keys() if beside.before.get(p) != beside.after.get(p)}
    assert changed == set()
    record = next(beside.env.site_packages.glob("dtscale_emulator-*.dist-info")) / "RECORD"
    assert not [line for line in record.read_text().splitlines() if line.startswith("durabletask/")]
    assert beside.env.pip("check").returncode == 0


def test_microsofts_sdk_runs_a_workflow_on_the_emulator_process(beside: Beside) -> None:
    with Process(beside.env, "durabletask-emulator", "--port", "0", "--in-memory", "--no-dashboard") as emulator:
        outcome = _workflow(beside.env, "--address", emulator_address(emulator), "--instance-id", "beside-process")
    _ran_on_microsofts_sdk(outcome, beside.env)


def test_microsofts_sdk_runs_a_workflow_on_the_emulator_in_its_own_process(beside: Beside) -> None:
    outcome = _workflow(beside.env, "--in-process", "--instance-id", "beside-in-process")
    _ran_on_microsofts_sdk(outcome, beside.env)
    # Both copies of the protocol stubs were loaded in one process: Microsoft's and the emulator's own.
    assert "durabletask.internal.orchestrator_service_pb2" in outcome["modules"]
    assert any(m.startswith("dtscale_emulator.protocol.") for m in outcome["modules"]), outcome["modules"]


def _get(url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    with opener.open(url, timeout=30) as response:
        return response.status, response.read().decode()


def test_the_dashboard_shows_an_instance_of_microsofts_sdk(beside: Beside) -> None:
    args = ("durabletask-emulator", "--port", "0", "--in-memory", "--dashboard-port", "0")
    with Process(beside.env, *args) as emulator:
        address = emulator_address(emulator)
        url = emulator.wait_for_line("Durable Task dashboard on ").rsplit(" ", 1)[1]
        _ran_on_microsofts_sdk(_workflow(beside.env, "--address", address, "--instance-id", "beside-dash"), beside.env)
        status, page = _get(url)
        assert status == 200 and "<title>Durable Task dashboard</title>" in page
        status, listing = _get(f"{url}api/hubs/default/orchestrations")
    assert status == 200
    rows = {row["instance_id"]: row for row in json.loads(listing)["items"]}
    assert rows["beside-dash"]["status"] == "COMPLETED" and rows["beside-dash"]["name"] == "greetings"
