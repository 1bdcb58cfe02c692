"""What the two wheels hold, whether their metadata would pass PyPI's checks, and what a clean install runs.

The hook armed by dtscale's .pth must cost a clean install nothing but the one small module it imports at
start, stay silent, and leave ``sys.meta_path`` at the first ``import durabletask``.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from tests.install.support import Wheels, make_venv

pytestmark = pytest.mark.timeout(900)
#: A file that belongs to a test suite or a benchmark, wherever it sits in a wheel.
TEST_OR_BENCH = re.compile(r"(^|/)(tests?|testsuite|bench|benchmarks?)/|(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$")
PTH = "dtscale-install-check.pth"
PTH_LINE = "import _dtscale_install_hook; _dtscale_install_hook.install()\n"


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _top_level(names: list[str]) -> set[str]:
    return {name.split("/", 1)[0] for name in names}


def test_the_wheels_hold_no_tests_or_benchmarks(wheels: Wheels) -> None:
    sdk, emulator = _names(wheels.sdk), _names(wheels.emulator)
    print(f"{wheels.sdk.name}: {len(sdk)} files; {wheels.emulator.name}: {len(emulator)} files")
    assert _top_level(sdk) == {
        "durabletask", "_dtscale_install_hook.py", "_dtscale_install_check.py", PTH, "dtscale-0.1.0.dist-info"
    }
    assert _top_level(emulator) == {"dtscale_emulator", "dtscale_emulator-0.1.0.dist-info"}
    assert [n for n in sdk + emulator if TEST_OR_BENCH.search(n)] == []
    # The in-memory test backend is part of the compatible API (durabletask.testing), not a test suite.
    assert "durabletask/testing/__init__.py" in sdk
    assert len([n for n in sdk if n.startswith("durabletask/")]) > 100
    assert len([n for n in emulator if n.startswith("dtscale_emulator/")]) > 50
    with zipfile.ZipFile(wheels.sdk) as archive:
        assert archive.read(PTH).decode() == PTH_LINE


def test_the_wheels_metadata_passes_twine_check(wheels: Wheels, tmp_path_factory: pytest.TempPathFactory) -> None:
    twine = make_venv(tmp_path_factory.mktemp("twine") / "venv", ["twine"])
    done = twine.run("twine", "check", "--strict", wheels.sdk, wheels.emulator)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


_MODULES = "import json, sys; print(json.dumps(sorted(sys.modules)))"
_ARMED_THEN_GONE = """
import sys, _dtscale_install_hook as hook
assert hook._FINDER is sys.meta_path[0], sys.meta_path
import durabletask.client, durabletask.worker
assert hook._FINDER not in sys.meta_path, sys.meta_path
print("disarmed")
"""


def test_a_clean_install_imports_one_module_at_start_and_warns_nothing(
    wheels: Wheels, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = make_venv(tmp_path_factory.mktemp("clean") / "venv", [wheels.sdk, wheels.emulator], wheels)
    pth = env.site_packages / PTH
    assert pth.read_text() == PTH_LINE
    with_check = set(json.loads(env.python_code(_MODULES).stdout))
    pth.rename(pth.with_suffix(".off"))
    try:
        without = set(json.loads(env.python_code(_MODULES).stdout))
    finally:
        pth.with_suffix(".off").rename(pth)
    assert with_check - without == {"_dtscale_install_hook"}

    done = env.python_code(_ARMED_THEN_GONE, PYTHONWARNINGS="error")
    assert done.returncode == 0 and done.stdout.strip() == "disarmed", done.stdout + done.stderr
    assert done.stderr == ""

    done = env.run("durabletask", "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Verdict: consistent" in done.stdout and done.stderr == ""
    assert "doctor" in env.run("durabletask", "--help").stdout
