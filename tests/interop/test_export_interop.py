"""``durabletask history --from-export`` on files written by Microsoft's exporter, in the peer interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from durabletask import client, task, worker

from .conftest import peer_env

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent


def xexp_add(ctx: task.ActivityContext, value: int) -> int:
    if value < 0:
        raise ValueError(f"negative {value}")
    return value + 1


def xexp_orch(ctx: task.OrchestrationContext, value: int) -> Any:
    first = yield ctx.call_activity(xexp_add, input=value)
    yield ctx.create_timer(timedelta(milliseconds=50))
    second = yield ctx.call_activity(xexp_add, input=first)
    return second


def _cli(address: str, taskhub: str, *argv: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLETASK_")}
    proc = subprocess.run([sys.executable, "-m", "durabletask.cli", "--endpoint", address, "--taskhub", taskhub,
                           *argv], capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def test_history_from_a_file_microsofts_exporter_wrote(peer_py: Path, emulator_port: int, tmp_path: Path) -> None:
    address, taskhub = f"localhost:{emulator_port}", f"xexp{uuid.uuid4().hex[:10]}"
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=[("taskhub", taskhub)])
    w.add_orchestrator(xexp_orch)
    w.add_activity(xexp_add)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address, metadata=[("taskhub", taskhub)])
    try:
        ok = c.schedule_new_orchestration(xexp_orch, input=1, instance_id=f"xexp-ok-{uuid.uuid4().hex[:6]}")
        bad = c.schedule_new_orchestration(xexp_orch, input=-5, instance_id=f"xexp-bad-{uuid.uuid4().hex[:6]}")
        for iid in (ok, bad):
            assert c.wait_for_orchestration_completion(iid, timeout=60) is not None
    finally:
        c.close()
        w.stop()
    # From outside the worktree, so the peer imports its own durabletask.
    proc = subprocess.run([str(peer_py), str(HERE / "peer_scripts" / "history_export.py"), address, taskhub,
                           str(tmp_path), ok, bad], capture_output=True, text=True, timeout=90, env=peer_env(),
                          cwd=_outside_worktree(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    paths = json.loads(proc.stdout.splitlines()[-1])
    assert set(paths) == {ok, bad} and all(p.endswith(".jsonl.gz") for p in paths.values())

    for iid in (ok, bad):
        for flags in ([], ["--json"]):
            live = _cli(address, taskhub, *flags, "history", iid)
            offline = _cli(address, taskhub, *flags, "history", "--from-export", paths[iid])
            assert offline[0] == live[0] == 0, offline[2]
            assert offline[1] == live[1]
    text = _cli(address, taskhub, "history", "--from-export", paths[bad])[1]
    assert "TaskFailed" in text and "builtins.ValueError: negative -5" in text and "TimerFired" not in text
    text = _cli(address, taskhub, "history", "--from-export", paths[ok])[1]
    assert "TimerFired" in text and "status=1" in text


def _outside_worktree(tmp_path: Path) -> str:
    work = tmp_path / "peer-cwd"
    work.mkdir(exist_ok=True)
    return str(work)
