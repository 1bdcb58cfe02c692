"""Tests of the tests: property tests draw fresh, reproducible inputs in CI; CI never skips a check; no test
relies on the order tests run in; no test skips because a part of this project is supposedly missing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tests.test_static_checks as static_checks

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

_PROBE = """
import os
from hypothesis import given, strategies as st

@given(st.integers())
def test_probe(n):
    with open(os.environ["PROBE_OUT"], "a") as out:
        out.write(f"{n}\\n")
"""


def _probe_run(tmp_path: Path, name: str, **env: str) -> tuple[list[str], str]:
    """Runs a one-property test file under this suite's conftest; returns the inputs drawn and the output."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(_PROBE)
    out = tmp_path / f"{name}.txt"
    environ = {k: v for k, v in os.environ.items() if k not in {"CI", "FUZZ_SEED", "FUZZ_SCALE"}}
    environ.update(env, PROBE_OUT=str(out), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-q", str(probe)],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out.read_text().splitlines(), proc.stdout


@pytest.mark.timeout(300)
def test_ci_draws_a_fresh_printed_seed_that_replays_the_same_inputs(tmp_path: Path) -> None:
    first, output = _probe_run(tmp_path, "ci-1", CI="true")
    seed = re.search(r"hypothesis: seed (\d+)", output)
    assert seed is not None, output
    assert len(first) > 100  # more examples than a local run's 100
    _, again = _probe_run(tmp_path, "ci-2", CI="true")
    assert f"seed {seed.group(1)}," not in again  # a fresh seed every CI run
    replay, _ = _probe_run(tmp_path, "replay", FUZZ_SEED=seed.group(1), FUZZ_SCALE="3")
    assert replay == first


@pytest.mark.timeout(300)
def test_local_runs_use_fixed_inputs(tmp_path: Path) -> None:
    one, output = _probe_run(tmp_path, "local-1")
    two, _ = _probe_run(tmp_path, "local-2")
    assert one == two and "fixed inputs" in output


def test_static_checks_fail_in_ci_when_a_tool_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(static_checks, "BIN", tmp_path)
    monkeypatch.setattr(static_checks.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        static_checks._tool("ruff")
    monkeypatch.setenv("CI", "true")
    try:
        static_checks._tool("mypy")
    except pytest.skip.Exception:
        pytest.fail("in CI a missing tool skipped its check")
    except pytest.fail.Exception as failure:
        assert "mypy is not installed" in str(failure)
    else:
        pytest.fail("in CI a missing tool was not reported")


def _test_sources() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in sorted(TESTS.rglob("*.py"))]


def test_no_test_skips_because_part_of_this_project_is_missing() -> None:
    # Our own modules always exist: an import failure must fail, not quietly skip a whole file.
    pattern = re.compile(r"importorskip\(\s*[\"'](durabletask|emulator|tests)\b")
    found = [f"{p.relative_to(ROOT)}:{m.group(0)}" for p, text in _test_sources() for m in pattern.finditer(text)]
    assert found == []


def test_no_test_is_named_to_run_first_or_last() -> None:
    # Names like test_zz_... exist only to run after the rest of a file: the test then depends on order.
    pattern = re.compile(r"^\s*(?:async\s+)?def (test_(?:z{2,}|a{2,}|0+)_\w*)", re.MULTILINE)
    found = [f"{p.relative_to(ROOT)}:{m.group(1)}" for p, text in _test_sources() for m in pattern.finditer(text)]
    assert found == []
