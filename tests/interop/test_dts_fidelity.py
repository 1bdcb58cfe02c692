"""Where our emulator follows DTS rather than Microsoft's in-memory backend, checked with both SDKs on it.

Each probe (``peer_scripts/fidelity_probes.py``) runs unchanged under Microsoft's SDK and ours, in fresh processes,
against our emulator; docs/conformance.md ("Fidelity with the DTS service") gives the DTS evidence for each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, our_env, peer_env

pytestmark = [
    pytest.mark.interop,
    pytest.mark.local_only("checks our emulator's DTS behaviour with both SDKs"),
]

PROBES = Path(__file__).resolve().parent / "peer_scripts" / "fidelity_probes.py"


def probe(python: Path | str, env: dict[str, str], cwd: str, *args: str) -> Any:
    proc = subprocess.run(
        [str(python), str(PROBES), *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.splitlines()[-1])


def both(peer_py: Path, emulator_port: int, name: str) -> tuple[Any, Any]:
    """(Microsoft's SDK's result, ours) for one probe, each on a task hub of its own."""
    address = f"localhost:{emulator_port}"
    theirs = probe(peer_py, peer_env(), "/", name, address, f"fid{uuid.uuid4().hex[:10]}")
    ours = probe(sys.executable, our_env(), str(ROOT), name, address, f"fid{uuid.uuid4().hex[:10]}")
    return theirs, ours


def test_the_history_holds_the_12_events_dts_stores(peer_py: Path, emulator_port: int) -> None:
    theirs, ours = both(peer_py, emulator_port, "history")
    # The sequence durabletask-js's e2e suite asserts against DTS, position by position.
    assert (
        theirs
        == ours
        == {
            "status": "COMPLETED",
            "events": [
                *("OrchestratorStarted", "ExecutionStarted", "TaskScheduled"),
                *("OrchestratorStarted", "TaskCompleted", "TimerCreated"),
                *("OrchestratorStarted", "TimerFired", "SubOrchestrationInstanceCreated"),
                *("OrchestratorStarted", "SubOrchestrationInstanceCompleted", "ExecutionCompleted"),
            ],
        }
    )


def test_entity_ids_over_100_characters_are_refused(peer_py: Path, emulator_port: int) -> None:
    theirs, ours = both(peer_py, emulator_port, "entity_ids")
    limit = "instanceId is 101 characters; the limit is 100 (for an entity, '@name@key' as a whole)"
    assert theirs == ours
    assert theirs["signal_100"] == "ok"
    assert theirs["signal_101"] == theirs["get_101"] == ["INVALID_ARGUMENT", limit]
    status, error_type, message = theirs["call_101"]
    assert (status, error_type) == ("FAILED", "EntityIdTooLong")
    assert "entityOperationCalled.targetInstanceId is 101 characters; the limit is 100" in message


def test_a_running_instance_restarts_under_a_new_id(peer_py: Path, emulator_port: int) -> None:
    theirs, ours = both(peer_py, emulator_port, "restart")
    assert (
        theirs
        == ours
        == {
            "same_id": ["FAILED_PRECONDITION", True],
            "new_id_differs": True,
            "original": "RUNNING",
            "copy": ["RUNNING", '"original"'],
        }
    )


def test_a_reuse_policy_excluding_terminated_with_unfinished_statuses_is_refused(
    peer_py: Path, emulator_port: int
) -> None:
    theirs, ours = both(peer_py, emulator_port, "reuse")
    assert theirs == ours
    assert theirs["before"] == "SUSPENDED" and theirs["after"] == ["SUSPENDED", '"original"']
    code, message = theirs["refused"]
    assert code == "INVALID_ARGUMENT"
    assert message.startswith(
        "Invalid reusable statuses: cannot exclude 'Terminated' while also allowing reuse of running instances"
    )


def test_versioned_filters_take_the_unversioned_activity_of_a_versioned_orchestration(
    peer_py: Path, emulator_port: int
) -> None:
    theirs, ours = both(peer_py, emulator_port, "filters")
    assert (
        theirs
        == ours
        == {
            "explicit": ["COMPLETED", '"Hello, explicit!"'],
            "strict_versioning": ["COMPLETED", '"Hello, strict_versioning!"'],
        }
    )
