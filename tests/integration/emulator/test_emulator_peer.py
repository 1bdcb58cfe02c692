"""Conformance: Microsoft's official SDK (isolated venv, subprocess) runs real workloads against our emulator."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dtscale_emulator.server import EmulatorServer

from .conftest import peer_env

pytestmark = pytest.mark.interop
SCRIPT = Path(__file__).parent / "peer" / "scenarios.py"
SCENARIOS = [
    "chaining",
    "fanout",
    "timer",
    "event",
    "suborch",
    "continue_as_new",
    "failure",
    "terminate",
    "suspend",
    "purge_query",
    "rewind",
    "entity_signal",
    "entity_call",
    "entity_lock",
]


def _run(peer_py: Path, scenarios: list[str], timeout: float) -> dict[str, dict[str, object]]:
    with EmulatorServer(port=0, in_memory=True) as server:
        proc = subprocess.run(
            [str(peer_py), str(SCRIPT), server.address, *scenarios],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=peer_env(),
            cwd=SCRIPT.parent,
        )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    found = {line.pop("scenario"): line for line in lines}
    assert proc.returncode == 0, proc.stderr[-3000:]
    return found


@pytest.fixture(scope="module")
def results(peer_py: Path) -> Iterator[dict[str, dict[str, object]]]:
    yield _run(peer_py, SCENARIOS, timeout=100)


@pytest.mark.adversarial
def test_payloads_of_2_mib_fail_the_orchestration(peer_py: Path) -> None:
    """The emulator fails the work at once instead of redelivering it after each lease timeout."""
    got = _run(peer_py, ["oversized_result", "oversized_output"], timeout=150)
    activity, output = got["oversized_result"], got["oversized_output"]
    assert activity["status"] == "FAILED" and str(activity["type"]).endswith("TaskFailedError"), activity
    assert "result is 2097154 bytes; the limit is 1048576 bytes" in str(activity["message"]), activity
    assert output["status"] == "FAILED" and output["type"] == "PayloadTooLarge", output
    assert "result is 2097154 bytes; the limit is 1048576 bytes" in str(output["message"]), output
    print(f"failed after {float(activity['elapsed']):.2f} s and {float(output['elapsed']):.2f} s")  # type: ignore[arg-type]


def test_chaining(results: dict[str, dict[str, object]]) -> None:
    assert results["chaining"] == {"status": "COMPLETED", "output": ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]}


def test_fan_out_fan_in(results: dict[str, dict[str, object]]) -> None:
    assert results["fanout"] == {"status": "COMPLETED", "output": sum(2 * i for i in range(20))}


def test_durable_timer(results: dict[str, dict[str, object]]) -> None:
    got = results["timer"]
    assert got["status"] == "COMPLETED" and got["output"] == "fired"
    assert 0.9 <= float(got["elapsed"]) < 10  # type: ignore[arg-type]


def test_external_event(results: dict[str, dict[str, object]]) -> None:
    assert results["event"] == {"status": "COMPLETED", "output": "approved:yes"}


def test_sub_orchestrations(results: dict[str, dict[str, object]]) -> None:
    assert results["suborch"] == {"status": "COMPLETED", "output": [1, 3, 5]}


def test_continue_as_new(results: dict[str, dict[str, object]]) -> None:
    assert results["continue_as_new"] == {"status": "COMPLETED", "output": 3}


def test_activity_failure_fails_the_orchestration(results: dict[str, dict[str, object]]) -> None:
    assert results["failure"]["status"] == "FAILED"
    assert "boom" in str(results["failure"]["message"])


def test_terminate(results: dict[str, dict[str, object]]) -> None:
    assert results["terminate"] == {"status": "TERMINATED", "output": "stopped"}


def test_suspend_holds_events_until_resume(results: dict[str, dict[str, object]]) -> None:
    assert results["suspend"] == {
        "suspended": "SUSPENDED",
        "while_suspended": "SUSPENDED",
        "status": "COMPLETED",
        "output": "approved:later",
    }


def test_query_and_purge(results: dict[str, dict[str, object]]) -> None:
    assert results["purge_query"] == {"found": True, "deleted": 1, "after": True}


def test_rewind_reruns_only_the_failed_activity(results: dict[str, dict[str, object]]) -> None:
    assert results["rewind"] == {"first": "FAILED", "status": "COMPLETED", "output": 11, "flaky_calls": 2}


def test_entity_signals_update_state(results: dict[str, dict[str, object]]) -> None:
    assert results["entity_signal"] == {"state": 12, "listed": True}


def test_orchestration_calls_an_entity(results: dict[str, dict[str, object]]) -> None:
    assert results["entity_call"] == {"status": "COMPLETED", "output": 3}


def test_critical_section_locks_and_releases(results: dict[str, dict[str, object]]) -> None:
    assert results["entity_lock"] == {"status": "COMPLETED", "output": [1, 2], "locked_after": None}
