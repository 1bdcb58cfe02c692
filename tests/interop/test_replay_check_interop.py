"""The replay check on histories Microsoft's SDK recorded and on files Microsoft's exporter wrote."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from durabletask import client
from durabletask.testing import ReplayChecker, Verdict, histories_from_files
from tests.e2e import replay_check_app as app

from .conftest import peer_env

pytestmark = pytest.mark.interop

SCRIPTS = Path(__file__).resolve().parent / "peer_scripts"


def _peer(peer_py: Path, script: str, tmp_path: Path, *args: str) -> dict[str, object]:
    cwd = tmp_path / "peer-cwd"  # outside the worktree, so the peer imports its own durabletask
    cwd.mkdir(exist_ok=True)
    proc = subprocess.run(
        [str(peer_py), str(SCRIPTS / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=peer_env(),
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    paths: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return paths


def _verdicts(release: str, folder: Path) -> list[tuple[str, Verdict]]:
    report = ReplayChecker(app.build(release)).check(histories_from_files([folder]))
    return sorted((r.instance_id, r.verdict) for r in report.results)


def test_histories_microsofts_worker_recorded_and_its_exporter_wrote(
    peer_py: Path, emulator_port: int, tmp_path: Path
) -> None:
    address, taskhub = f"localhost:{emulator_port}", f"rcx{uuid.uuid4().hex[:10]}"
    ids = [f"rcx-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    folder = tmp_path / "files"
    paths = _peer(peer_py, "replay_recorder.py", tmp_path, address, taskhub, str(folder), *ids)
    assert set(paths) == set(ids)
    files = sorted(p.name for p in folder.iterdir())
    assert [f.endswith((".json", ".jsonl.gz")) for f in files] == [True] * 4
    both = sorted(ids * 2)  # a JSON and a JSON-lines file per instance
    assert _verdicts("v1", folder) == [(i, Verdict.REPLAYS) for i in both]
    assert _verdicts("compatible", folder) == [(i, Verdict.REPLAYS) for i in both]
    report = ReplayChecker(app.build_incompatible()).check(histories_from_files([folder]))
    assert [(r.verdict, r.divergence.sequence_id if r.divergence else None) for r in report.results] == [
        (Verdict.DIVERGES, 2)
    ] * 4


def test_histories_our_worker_recorded_and_microsofts_exporter_wrote(
    peer_py: Path, emulator_port: int, tmp_path: Path
) -> None:
    address, taskhub = f"localhost:{emulator_port}", f"rco{uuid.uuid4().hex[:10]}"
    metadata = [("taskhub", taskhub)]
    w = app.build("v1", host_address=address, metadata=metadata)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address, metadata=metadata)
    iid = f"rco-{uuid.uuid4().hex[:8]}"
    try:
        c.schedule_new_orchestration("order", input={"sku": "desk"}, instance_id=iid)
        deadline = time.monotonic() + 30
        while c.get_orchestration_state(iid).serialized_custom_status != '"waiting"':
            assert time.monotonic() < deadline, "the instance never reached its timer"
            time.sleep(0.05)
        # Microsoft's exporter takes finished instances only: this one ends terminated while it waits.
        c.terminate_orchestration(iid, output="stopped")
        c.wait_for_orchestration_completion(iid, timeout=30)
    finally:
        c.close()
        w.stop()
    folder = tmp_path / "files"
    _peer(peer_py, "history_export.py", tmp_path, address, taskhub, str(folder), iid)
    assert _verdicts("compatible", folder) == [(iid, Verdict.REPLAYS)]
    assert _verdicts("incompatible", folder) == [(iid, Verdict.DIVERGES)]
