"""dtscale and Microsoft's SDK in one venv: pip lets both write the ``durabletask`` package, and we say so.

The venv of the module installs this checkout's wheels (what a clean install runs is recorded then), then
``agent-framework-durabletask`` plainly, so pip resolves Microsoft's ``durabletask`` and
``durabletask-azuremanaged`` into it and overwrites dtscale's files. Importing the client or the worker warns
with the repair, the command line reports it, ``durabletask doctor`` lists it and exits 1, and the emulator
(which imports nothing of ``durabletask``) still serves. Two small venvs, with the packages installed without
their dependencies in a chosen order, run the repair that doctor prints and install Microsoft's SDK first.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.system.install.support import (
    PTH,
    PTH_LINE,
    Preparations,
    Process,
    Venv,
    Wheels,
    emulator_address,
    make_venv,
    prepared_early,
    record_hash,
    recorded_hashes,
)

AGENT_FRAMEWORK = "agent-framework-durabletask"
MICROSOFT = ("durabletask==1.12.0", "durabletask-azuremanaged==1.12.0")
WARNING = "DurableTaskInstallWarning"

pytestmark = pytest.mark.timeout(900)


_MODULES_AT_START = "import json, sys; print(json.dumps(sorted(sys.modules)))"
_ARMED_THEN_GONE = """
import sys, _dtscale_install_hook as hook
assert hook._FINDER is sys.meta_path[0], sys.meta_path
import durabletask.client, durabletask.worker
assert hook._FINDER not in sys.meta_path, sys.meta_path
print("disarmed")
"""


@dataclass(frozen=True)
class Clean:
    """What the venv ran with this checkout's wheels alone, before anything else came in."""

    pth: str
    modules_with_pth: set[str]
    modules_without_pth: set[str]
    armed_then_gone: subprocess.CompletedProcess[str]
    doctor: subprocess.CompletedProcess[str]
    help: subprocess.CompletedProcess[str]


def _clean(env: Venv) -> Clean:
    pth = env.site_packages / PTH
    with_pth = set(json.loads(env.python_code(_MODULES_AT_START).stdout))
    pth.rename(pth.with_suffix(".off"))
    try:
        without = set(json.loads(env.python_code(_MODULES_AT_START).stdout))
    finally:
        pth.with_suffix(".off").rename(pth)
    return Clean(
        pth.read_text(), with_pth, without, env.python_code(_ARMED_THEN_GONE, PYTHONWARNINGS="error"),
        env.run("durabletask", "doctor"), env.run("durabletask", "--help"),
    )


@dataclass(frozen=True)
class Overwritten:
    env: Venv
    clean: Clean


@prepared_early
def _overwritten(wheels: Wheels, folder: Path) -> Overwritten:
    env = make_venv(folder / "venv", [wheels.sdk, wheels.emulator], wheels)
    clean = _clean(env)
    env.install(AGENT_FRAMEWORK)
    return Overwritten(env, clean)


@pytest.fixture(scope="module")
def overwritten(preparations: Preparations) -> Overwritten:
    found: Overwritten = preparations.result(_overwritten)
    return found


def _small_venv(wheels: Wheels, path: Path, *installs: Sequence[str | Path]) -> Venv:
    """The emulator's wheel with its dependencies (what doctor needs), then each of ``installs`` in turn without
    dependencies: the order of the writes to ``durabletask/`` is the test's, and the venv stays small."""
    env = make_venv(path, [wheels.emulator], wheels)
    for requirements in installs:
        env.install("--no-deps", *requirements)
    return env


def _doctor(env: Venv) -> tuple[int, dict[str, Any]]:
    done = env.run("durabletask", "doctor", "--json")
    return done.returncode, json.loads(done.stdout)


def _shared(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["path"]: entry for entry in report["shared"]}


def _assert_the_warning(stderr: str, env: Venv) -> None:
    """The warning names both sides, the repair commands for this interpreter, and how to keep both."""
    assert stderr.count(WARNING) == 1, stderr
    assert "dtscale 0.1.0 and durabletask 1.12.0, durabletask-azuremanaged 1.12.0" in stderr
    pip = f"{env.bin / 'python'} -m pip"
    assert f"{pip} uninstall -y durabletask durabletask-azuremanaged\n" in stderr
    assert f"{pip} install --force-reinstall --no-deps dtscale==0.1.0\n" in stderr
    assert "'pip install --no-deps PACKAGE'" in stderr and "override-dependencies" in stderr


def test_pip_put_microsofts_modules_into_dtscales_package(overwritten: Overwritten) -> None:
    # The premise: both RECORDs list the package, client and worker modules, and the bytes on disk are Microsoft's.
    site = overwritten.env.site_packages
    ours = recorded_hashes(site, "dtscale-0.1.0.dist-info")
    microsofts = recorded_hashes(site, "durabletask-1.12.0.dist-info")
    for path in ("durabletask/__init__.py", "durabletask/client.py", "durabletask/worker.py"):
        assert record_hash(site / path) == microsofts[path] != ours[path]


@pytest.mark.parametrize("module", ["durabletask.client", "durabletask.worker", "durabletask.azuremanaged.client"])
def test_importing_the_sdk_warns_once_with_the_repair(overwritten: Overwritten, module: str) -> None:
    done = overwritten.env.python_code(f"import {module}\nimport durabletask.client, durabletask.worker")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"<string>:1: {WARNING}: "), done.stderr
    _assert_the_warning(done.stderr, overwritten.env)


def test_the_command_line_reports_it(overwritten: Overwritten) -> None:
    done = overwritten.env.run("durabletask", "list", "--endpoint", "127.0.0.1:1")
    assert done.returncode != 0
    _assert_the_warning(done.stderr, overwritten.env)


def test_doctor_lists_the_files_and_exits_1(overwritten: Overwritten) -> None:
    done = overwritten.env.run("durabletask", "doctor")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "Verdict: inconsistent" in out
    assert "durabletask 1.12.0 " in out and f"required by {AGENT_FRAMEWORK} " in out
    assert "durabletask/client.py" in out and "dtscale-emulator: 0.1.0, dtscale requires ==0.1.0; importable" in out

    code, report = _doctor(overwritten.env)
    assert code == 1 and report["consistent"] is False
    assert {d["name"] for d in report["others"]} == {"durabletask", "durabletask-azuremanaged"}
    assert report["sdk"]["name"] == "dtscale" and not report["sdk"]["editable"]
    differing = {(d["path"], d["distribution"]) for d in report["differing"]}
    assert ("durabletask/client.py", "dtscale") in differing  # Microsoft's bytes, not dtscale's
    python = str(overwritten.env.bin / "python")
    assert report["repair"] == [
        f"{python} -m pip uninstall -y durabletask durabletask-azuremanaged",
        f"{python} -m pip install --force-reinstall --no-deps dtscale==0.1.0",
    ]
    assert report["emulator"] == {"required": "==0.1.0", "installed": "0.1.0", "importable": True, "error": None}


def test_the_emulator_still_starts_and_answers_hello(overwritten: Overwritten) -> None:
    args = ("durabletask-emulator", "--port", "0", "--in-memory", "--no-dashboard")
    with Process(overwritten.env, *args) as emulator, grpc.insecure_channel(emulator_address(emulator)) as channel:
        hello = channel.unary_unary(
            "/TaskHubSidecarService/Hello",
            request_serializer=lambda _: b"",  # google.protobuf.Empty
            response_deserializer=lambda data: data,
        )
        assert hello(None, timeout=30, wait_for_ready=True) == b""
    assert not [line for line in emulator.lines if WARNING in line]


@prepared_early
def _dtscale_then_microsoft(wheels: Wheels, folder: Path) -> Venv:
    # dtscale, then Microsoft's SDK over it: the files as agent-framework-durabletask's install leaves them.
    return _small_venv(wheels, folder / "venv", [wheels.sdk], MICROSOFT)


@prepared_early
def _microsoft_then_dtscale(wheels: Wheels, folder: Path) -> Venv:
    return _small_venv(wheels, folder / "venv", MICROSOFT, [wheels.sdk])


def test_the_repair_that_doctor_prints_gives_dtscale_its_package_back(preparations: Preparations) -> None:
    env: Venv = preparations.result(_dtscale_then_microsoft)  # this test's alone: it repairs it
    code, report = _doctor(env)
    assert code == 1 and _shared(report)["durabletask/client.py"]["content_of"] == "durabletask"
    uninstall, reinstall = report["repair"]  # dtscale==0.1.0 comes from this session's wheels (PIP_FIND_LINKS)

    # Uninstalling Microsoft's SDK takes the files both wrote, dtscale's package module among them.
    done = env.run(*shlex.split(uninstall), timeout=900)
    assert done.returncode == 0, f"{uninstall}:\n{done.stdout}\n{done.stderr}"
    done = env.python_code("import durabletask")
    assert done.stderr.count(WARNING) == 1 and "__init__.py is gone" in done.stderr, done.stderr
    assert f"{env.bin / 'python'} -m pip install --force-reinstall --no-deps dtscale==0.1.0\n" in done.stderr
    code, report = _doctor(env)
    assert code == 1 and ("durabletask/__init__.py", "dtscale", "missing") in {
        (d["path"], d["distribution"], d["state"]) for d in report["differing"]
    }

    done = env.run(*shlex.split(reinstall), timeout=900)
    assert done.returncode == 0, f"{reinstall}:\n{done.stdout}\n{done.stderr}"
    code, report = _doctor(env)
    assert code == 0 and report["consistent"] and report["others"] == [] and report["differing"] == []
    done = env.python_code("import durabletask; print(durabletask.DISTRIBUTION_NAME)", PYTHONWARNINGS="error")
    assert done.returncode == 0 and done.stdout.strip() == "dtscale", done.stderr


def test_microsofts_sdk_installed_before_dtscale_is_reported_too(preparations: Preparations) -> None:
    env: Venv = preparations.result(_microsoft_then_dtscale)
    done = env.python_code("import durabletask")
    _assert_the_warning(done.stderr, env)
    code, report = _doctor(env)
    assert code == 1
    assert _shared(report)["durabletask/client.py"]["content_of"] == "dtscale"  # dtscale wrote last this time


def test_a_clean_install_imports_one_module_at_start_and_warns_nothing(overwritten: Overwritten) -> None:
    clean = overwritten.clean
    assert clean.pth == PTH_LINE
    assert clean.modules_with_pth - clean.modules_without_pth == {"_dtscale_install_hook"}
    done = clean.armed_then_gone  # with every warning an error
    assert done.returncode == 0 and done.stdout.strip() == "disarmed" and done.stderr == "", done.stdout + done.stderr
    assert clean.doctor.returncode == 0, clean.doctor.stdout + clean.doctor.stderr
    assert "Verdict: consistent" in clean.doctor.stdout and clean.doctor.stderr == ""
    assert "doctor" in clean.help.stdout
