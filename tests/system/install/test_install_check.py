"""The install check and ``durabletask doctor`` on site-packages folders made here, without pip or a network.

Each folder holds distribution metadata (METADATA, RECORD) and package files as pip would leave them after
the installs a test names; the venv tests in this folder do the same with pip and the real distributions.
"""

from __future__ import annotations

import shlex
import sys
import warnings
from pathlib import Path

import pytest

import _dtscale_install_check as install_check
import _dtscale_install_hook as install_hook
from durabletask._cli.commands import doctor as doctor_command
from durabletask._cli.install_state import inspect
from tests.system.install.support import record_hash

OURS = {"durabletask/__init__.py": b"# dtscale\n", "durabletask/client.py": b"# dtscale client\n"}
MICROSOFTS = {"durabletask/__init__.py": b"# microsoft\n", "durabletask/client.py": b"# microsoft client\n"}


def install(site: Path, name: str, version: str, files: dict[str, bytes], *, requires: tuple[str, ...] = ()) -> None:
    """Writes ``files`` into ``site`` and a dist-info folder whose RECORD lists them, as a wheel install does."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = []
    for relative, data in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        lines.append(f"{relative},sha256={record_hash(path)},{len(data)}")
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    (info / "METADATA").write_text("\n".join([*metadata, *(f"Requires-Dist: {r}" for r in requires)]) + "\n")
    (info / "RECORD").write_text("\n".join([*lines, f"{info.name}/RECORD,,"]) + "\n")


def dtscale(site: Path, files: dict[str, bytes] = OURS) -> None:
    install(site, "dtscale", "0.1.0", files, requires=("dtscale-emulator==0.1.0", "pydantic>=2.5"))


def microsofts_over_dtscale(site: Path) -> None:
    dtscale(site)
    install(site, "durabletask", "1.12.0", MICROSOFTS)
    install(site, "durabletask.azuremanaged", "1.12.0", {"durabletask/azuremanaged/client.py": b"# ms\n"},
            requires=("durabletask>=1.12.0",))
    install(site, "agent-framework-durabletask", "1.0.0b1", {"agent_framework_durabletask/__init__.py": b""},
            requires=("durabletask>=1.5.0,<2", "durabletask-azuremanaged>=1.4.0,<2"))


def test_dtscale_alone_is_no_problem(tmp_path: Path) -> None:
    dtscale(tmp_path)
    assert not install_hook.suspect(str(tmp_path))  # the start-up side does not even load the check
    assert install_check.scan(str(tmp_path)) == ("0.1.0", [])
    assert install_check.problem(str(tmp_path)) is None


def test_microsofts_distributions_are_named_with_the_commands_that_repair(tmp_path: Path) -> None:
    microsofts_over_dtscale(tmp_path)
    assert install_hook.suspect(str(tmp_path))
    assert install_check.scan(str(tmp_path)) == (
        "0.1.0", [("durabletask", "1.12.0"), ("durabletask-azuremanaged", "1.12.0")]
    )
    found = install_check.problem(str(tmp_path))
    assert found is not None
    pip = f"{shlex.quote(sys.executable)} -m pip"
    assert "dtscale 0.1.0 and durabletask 1.12.0, durabletask-azuremanaged 1.12.0 (Microsoft's)" in found
    assert f"\n    {pip} uninstall -y durabletask durabletask-azuremanaged\n" in found
    assert f"\n    {pip} install --force-reinstall --no-deps dtscale==0.1.0\n" in found
    assert install_check.KEEP_BESIDE in found


def test_where_uv_installed_dtscale_the_repair_uses_uv(tmp_path: Path) -> None:
    microsofts_over_dtscale(tmp_path)
    (tmp_path / "dtscale-0.1.0.dist-info" / "INSTALLER").write_text("uv\n")  # uv's environments have no pip
    uv = f"uv pip {{}} --python {shlex.quote(sys.executable)}"
    commands = [
        f"{uv.format('uninstall')} durabletask durabletask-azuremanaged",
        f"{uv.format('install')} --reinstall --no-deps dtscale==0.1.0",
    ]
    found = install_check.problem(str(tmp_path))
    assert found is not None and all(f"\n    {command}\n" in found for command in commands)
    assert inspect([str(tmp_path)]).repair[:2] == commands


def test_a_durabletask_named_distribution_without_files_in_the_package_is_no_conflict(tmp_path: Path) -> None:
    dtscale(tmp_path)
    install(tmp_path, "durabletask-tools", "2.0", {"durabletask_tools/__init__.py": b""})
    assert install_hook.suspect(str(tmp_path))  # named like Microsoft's: the check reads its RECORD
    assert install_check.problem(str(tmp_path)) is None


def test_an_egg_info_install_of_microsofts_sdk_counts(tmp_path: Path) -> None:
    dtscale(tmp_path)
    egg = tmp_path / "durabletask-1.12.0-py3.11.egg-info"
    egg.mkdir()
    (egg / "installed-files.txt").write_text("../durabletask/__init__.py\nPKG-INFO\n")
    assert install_check.scan(str(tmp_path))[1] == [("durabletask", "1.12.0")]


def test_a_package_that_lost_its_init_is_reported(tmp_path: Path) -> None:
    dtscale(tmp_path)
    (tmp_path / "durabletask" / "__init__.py").unlink()  # what uninstalling Microsoft's SDK over dtscale leaves
    assert install_hook.suspect(str(tmp_path))
    found = install_check.problem(str(tmp_path))
    assert found is not None and "__init__.py is gone" in found
    assert "pip uninstall" not in found and "install --force-reinstall --no-deps dtscale==0.1.0" in found


def test_the_warning_is_issued_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    microsofts_over_dtscale(tmp_path)
    monkeypatch.setattr(install_check, "_reported", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert install_check.report(str(tmp_path)) is not None
        assert install_check.report(str(tmp_path)) is not None
    assert [w.category for w in caught] == [install_check.DurableTaskInstallWarning]
    assert caught[0].filename == __file__  # the line that asked, not the check's own


def test_the_finder_checks_at_the_first_lookup_of_durabletask_and_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    microsofts_over_dtscale(tmp_path)
    monkeypatch.setattr(install_hook, "SITE_DIR", str(tmp_path))
    monkeypatch.setattr(install_check, "_reported", False)
    monkeypatch.setattr(sys, "meta_path", [install_hook._FINDER, *sys.meta_path])
    finder = install_hook._FINDER
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert finder.find_spec("grpc") is None and finder.find_spec("durabletask.client", ["x"]) is None
        assert caught == [] and finder in sys.meta_path
        assert finder.find_spec("durabletask") is None  # it finds nothing: the import goes on as before
    assert [w.category for w in caught] == [install_check.DurableTaskInstallWarning]
    assert finder not in sys.meta_path


def _doctor(site: Path) -> tuple[int, dict[str, object], str]:
    state = inspect([str(site)])
    return (0 if state.consistent else 1), doctor_command.as_json(state), doctor_command.render(state)


def test_doctor_finds_dtscale_alone_consistent(tmp_path: Path) -> None:
    dtscale(tmp_path)
    code, report, text = _doctor(tmp_path)
    assert code == 0 and report["problems"] == [] and report["repair"] == []
    assert report["imported_from"] == [str((tmp_path / "durabletask").resolve())]
    assert "Verdict: consistent" in text


def test_doctor_lists_whose_bytes_each_shared_file_holds(tmp_path: Path) -> None:
    microsofts_over_dtscale(tmp_path)
    code, report, text = _doctor(tmp_path)
    assert code == 1
    assert report["shared"] == [
        {"path": "durabletask/__init__.py", "claimed_by": ["dtscale", "durabletask"], "content_of": "durabletask"},
        {"path": "durabletask/client.py", "claimed_by": ["dtscale", "durabletask"], "content_of": "durabletask"},
    ]
    others = {d["name"]: d["required_by"] for d in report["others"]}  # type: ignore[union-attr]
    assert others == {
        "durabletask": ["agent-framework-durabletask 1.0.0b1", "durabletask-azuremanaged 1.12.0"],
        "durabletask-azuremanaged": ["agent-framework-durabletask 1.0.0b1"],
    }
    assert report["repair"][:2] == install_check.repair_commands(  # type: ignore[index]
        sys.executable, ["durabletask", "durabletask-azuremanaged"], "0.1.0"
    )
    assert "durabletask/client.py" in text and "Verdict: inconsistent" in text and install_check.KEEP_BESIDE in text


def test_doctor_reports_changed_missing_and_unclaimed_files(tmp_path: Path) -> None:
    dtscale(tmp_path, {**OURS, "durabletask/worker.py": b"# dtscale worker\n"})
    (tmp_path / "durabletask" / "client.py").write_bytes(b"# edited by hand\n")
    (tmp_path / "durabletask" / "worker.py").unlink()
    (tmp_path / "durabletask" / "stray.py").write_bytes(b"")
    code, report, _ = _doctor(tmp_path)
    assert code == 1
    assert report["differing"] == [
        {"path": "durabletask/client.py", "distribution": "dtscale", "state": "differs"},
        {"path": "durabletask/worker.py", "distribution": "dtscale", "state": "missing"},
    ]
    assert report["unclaimed"] == ["durabletask/stray.py"]
    assert report["repair"] == install_check.repair_commands(sys.executable, [], "0.1.0")


def test_doctor_without_dtscale_says_so(tmp_path: Path) -> None:
    install(tmp_path, "durabletask", "1.12.0", MICROSOFTS)
    code, report, _ = _doctor(tmp_path)
    assert code == 1 and report["sdk"] is None
    assert report["problems"][0] == f"dtscale is not installed for {sys.executable}"  # type: ignore[index]
