"""dtscale and Microsoft's SDK in one venv: pip lets both write the ``durabletask`` package, and we say so.

The venv of the module installs this checkout's wheels, then ``agent-framework-durabletask`` plainly, so pip
resolves Microsoft's ``durabletask`` and ``durabletask-azuremanaged`` into it and overwrites dtscale's files.
Importing the client or the worker warns with the repair, the command line reports it, ``durabletask doctor``
lists it and exits 1, and the emulator (which imports nothing of ``durabletask``) still serves. Two more venvs:
one runs the repair that doctor prints, one installs Microsoft's SDK before dtscale.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.install.support import Process, Venv, Wheels, emulator_address, make_venv, record_hash, recorded_hashes

AGENT_FRAMEWORK = "agent-framework-durabletask"
MICROSOFT = ("durabletask==1.12.0", "durabletask-azuremanaged==1.12.0")
WARNING = "DurableTaskInstallWarning"

pytestmark = pytest.mark.timeout(900)


def _overwritten(wheels: Wheels, path: Path) -> Venv:
    env = make_venv(path, [wheels.sdk, wheels.emulator], wheels)
    env.install(AGENT_FRAMEWORK)
    return env


@pytest.fixture(scope="module")
def overwritten(wheels: Wheels, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    return _overwritten(wheels, tmp_path_factory.mktemp("overwritten") / "venv")


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


def test_pip_put_microsofts_modules_into_dtscales_package(overwritten: Venv) -> None:
    # The premise: both RECORDs list the package, client and worker modules, and the bytes on disk are Microsoft's.
    site = overwritten.site_packages
    ours = recorded_hashes(site, "dtscale-0.1.0.dist-info")
    microsofts = recorded_hashes(site, "durabletask-1.12.0.dist-info")
    for path in ("durabletask/__init__.py", "durabletask/client.py", "durabletask/worker.py"):
        assert record_hash(site / path) == microsofts[path] != ours[path]


@pytest.mark.parametrize("module", ["durabletask.client", "durabletask.worker", "durabletask.azuremanaged.client"])
def test_importing_the_sdk_warns_once_with_the_repair(overwritten: Venv, module: str) -> None:
    done = overwritten.python_code(f"import {module}\nimport durabletask.client, durabletask.worker")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"<string>:1: {WARNING}: "), done.stderr
    _assert_the_warning(done.stderr, overwritten)


def test_the_command_line_reports_it(overwritten: Venv) -> None:
    done = overwritten.run("durabletask", "list", "--endpoint", "127.0.0.1:1")
    assert done.returncode != 0
    _assert_the_warning(done.stderr, overwritten)


def test_doctor_lists_the_files_and_exits_1(overwritten: Venv) -> None:
    done = overwritten.run("durabletask", "doctor")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "Verdict: inconsistent" in out
    assert "durabletask 1.12.0 " in out and f"required by {AGENT_FRAMEWORK} " in out
    assert "durabletask/client.py" in out and "dtscale-emulator: 0.1.0, dtscale requires ==0.1.0; importable" in out

    code, report = _doctor(overwritten)
    assert code == 1 and report["consistent"] is False
    assert {d["name"] for d in report["others"]} == {"durabletask", "durabletask-azuremanaged"}
    assert report["sdk"]["name"] == "dtscale" and not report["sdk"]["editable"]
    differing = {(d["path"], d["distribution"]) for d in report["differing"]}
    assert ("durabletask/client.py", "dtscale") in differing  # Microsoft's bytes, not dtscale's
    python = str(overwritten.bin / "python")
    assert report["repair"] == [
        f"{python} -m pip uninstall -y durabletask durabletask-azuremanaged",
        f"{python} -m pip install --force-reinstall --no-deps dtscale==0.1.0",
    ]
    assert report["emulator"] == {"required": "==0.1.0", "installed": "0.1.0", "importable": True, "error": None}


def test_the_emulator_still_starts_and_answers_hello(overwritten: Venv) -> None:
    args = ("durabletask-emulator", "--port", "0", "--in-memory", "--no-dashboard")
    with Process(overwritten, *args) as emulator, grpc.insecure_channel(emulator_address(emulator)) as channel:
        hello = channel.unary_unary(
            "/TaskHubSidecarService/Hello",
            request_serializer=lambda _: b"",  # google.protobuf.Empty
            response_deserializer=lambda data: data,
        )
        assert hello(None, timeout=30, wait_for_ready=True) == b""
    assert not [line for line in emulator.lines if WARNING in line]


def test_the_repair_that_doctor_prints_gives_dtscale_its_package_back(
    wheels: Wheels, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = _overwritten(wheels, tmp_path_factory.mktemp("repaired") / "venv")
    code, report = _doctor(env)
    assert code == 1
    for command in report["repair"]:  # dtscale==0.1.0 comes from this session's wheels (PIP_FIND_LINKS)
        done = env.run(*shlex.split(command), timeout=900)
        assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    code, report = _doctor(env)
    assert code == 0 and report["consistent"] and report["others"] == [] and report["differing"] == []
    done = env.python_code(
        "import durabletask, durabletask.client, durabletask.worker; print(durabletask.DISTRIBUTION_NAME)",
        PYTHONWARNINGS="error",
    )
    assert done.returncode == 0 and done.stdout.strip() == "dtscale", done.stderr


def test_microsofts_sdk_installed_before_dtscale_is_reported_too(
    wheels: Wheels, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Without dependencies: what is under test is who writes the package's files, and this keeps the venv small.
    env = make_venv(tmp_path_factory.mktemp("microsoft-first") / "venv", ["--no-deps", *MICROSOFT], wheels)
    env.install("--no-deps", wheels.sdk, wheels.emulator)
    done = env.python_code("import durabletask")
    _assert_the_warning(done.stderr, env)
    code, report = _doctor(env)
    assert code == 1
    assert _shared(report)["durabletask/client.py"]["content_of"] == "dtscale"  # dtscale wrote last this time

    # Uninstalling Microsoft's SDK now takes the files both wrote, dtscale's package module among them.
    env.pip("uninstall", "-y", "durabletask", "durabletask-azuremanaged")
    done = env.python_code("import durabletask")
    assert done.stderr.count(WARNING) == 1 and "__init__.py is gone" in done.stderr, done.stderr
    assert f"{env.bin / 'python'} -m pip install --force-reinstall --no-deps dtscale==0.1.0\n" in done.stderr
    code, report = _doctor(env)
    assert code == 1 and ("durabletask/__init__.py", "dtscale", "missing") in {
        (d["path"], d["distribution"], d["state"]) for d in report["differing"]
    }
