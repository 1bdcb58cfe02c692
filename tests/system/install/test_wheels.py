"""What the two wheels hold, and whether their metadata would pass PyPI's checks (``twine check``)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import running_in_ci
from tests.system.install.support import PTH, PTH_LINE, Wheels

pytestmark = pytest.mark.timeout(900)
#: A file that belongs to a test suite or a benchmark, wherever it sits in a wheel.
TEST_OR_BENCH = re.compile(r"(^|/)(tests?|testsuite|bench|benchmarks?)/|(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$")


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


def test_the_wheels_metadata_passes_twine_check(wheels: Wheels) -> None:
    if importlib.util.find_spec("twine") is None:  # a dev dependency: a stale environment lacks it
        message = "twine is not installed in this environment (pip install -e '.[dev]')"
        if running_in_ci():
            pytest.fail(message + "; CI must run this check")
        pytest.skip(message)
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheels.sdk), str(wheels.emulator)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout
