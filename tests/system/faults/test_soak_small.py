"""A small soak (bench/soak.py): hundreds of orchestrations, two worker processes, a fault every second."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.reliability import ROOT, env

FAULTS = "cut_stream_every=1s,stall_every=2.5s,stall_for=3s,goaway_every=3s,reject_completion_every=23"


def _soak(*extra: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--count", "300", "--faults", FAULTS, "--json", *extra],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=110,
    )
    report: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


def _assert_clean(report: dict[str, object]) -> None:
    assert report["completed"] == 300 and report["lost"] == 0, report
    assert report["duplicated_completions"] == 0
    assert report["effects"] == report["expected_effects"] == 600


def test_small_soak_without_sessions_loses_and_duplicates_nothing() -> None:
    report = _soak("--no-sessions", "--instance-timeout", "60", "--max-growth", "10")
    _assert_clean(report)
    assert report["problems"] == []


def test_small_soak_with_sessions_loses_and_duplicates_nothing() -> None:
    report = _soak("--instance-timeout", "60", "--max-growth", "10")
    _assert_clean(report)
    assert report["problems"] == []
