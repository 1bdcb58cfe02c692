"""stop(grace_period=...) with an activity that never returns: the process exits, and its log names what it left."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask import client
from tests.support.reliability import ROOT, env, wait_until

APP = Path(__file__).with_name("blocking_worker_app.py")


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[EmulatorServer]:
    server = EmulatorServer(port=0, db_path=str(tmp_path / "emulator.db"), health_ping_interval=0.5)
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.adversarial
@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_process_whose_activity_never_returns_exits_after_stop(
    emulator: EmulatorServer, tmp_path: Path, kind: str
) -> None:
    started, log = tmp_path / "started", tmp_path / "worker.log"
    with client.TaskHubGrpcClient(host_address=emulator.address) as c:
        instance_id = c.schedule_new_orchestration("waits_on_the_block", instance_id="stop-with-a-stuck-activity")
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(APP), emulator.address, str(started), "0.5", kind],
            cwd=ROOT,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        wait_until(started.exists, 60, "the activity to start")
        # The process ends by itself once stop() has returned; before the fix it waited for the activity forever.
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"the worker process did not exit after stop(); its log:\n{log.read_text()[-3000:]}")
    assert proc.returncode == 0, log.read_text()
    assert out.split() == ["stopped"]
    task_id = started.read_text().split()[1]
    abandoned = [line for line in log.read_text().splitlines() if "grace period" in line]
    assert len(abandoned) == 1, log.read_text()
    assert f"activity 'never_returns' (task {task_id}) of orchestration '{instance_id}'" in abandoned[0]
    assert "1 work item(s)" in abandoned[0]
