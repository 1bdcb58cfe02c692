"""Time skipping belongs to the emulator: Microsoft's SDK, as the worker and the client, sees a month pass at once."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from durabletask.testing import InMemoryOrchestrationBackend, create_test_backend

from .conftest import peer_env

pytestmark = pytest.mark.interop

SCRIPTS = Path(__file__).resolve().parent / "peer_scripts"


@pytest.fixture
def skipping() -> Iterator[InMemoryOrchestrationBackend]:
    backend = create_test_backend(port=0, time_skipping=True)
    yield backend
    backend.stop()


def test_microsofts_worker_runs_a_month_long_orchestration_on_a_skipping_emulator(
    peer_py: Path, skipping: InMemoryOrchestrationBackend, tmp_path: Path
) -> None:
    began = skipping.now()
    proc = subprocess.run(
        [str(peer_py), str(SCRIPTS / "month_long.py"), skipping.address],
        capture_output=True,
        text=True,
        timeout=120,
        env=peer_env(),
        cwd=tmp_path,  # outside the worktree, so the peer imports its own durabletask
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["status"] == "COMPLETED"
    output = found["output"]
    assert output["result"] == "charged after 3 attempts"
    started, after_month, done = (datetime.fromisoformat(t) for t in output["times"])
    assert after_month - started == timedelta(days=30)
    assert done - after_month == timedelta(hours=3)  # the backoffs: 1 h, then 2 h
    assert skipping.now() - began == timedelta(days=30, hours=3)
