"""A worker killed (SIGKILL) in the middle of an export job: a new worker finishes it, each instance once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from durabletask.extensions.history_export import (
    ExportDestination,
    ExportJobCreationOptions,
    ExportJobStatus,
    ExportMode,
    LocalFolderHistoryWriter,
    read_exported_history,
)
from tests.integration.history_export.conftest import ExportHub

ROOT = Path(__file__).resolve().parents[3]
INSTANCES = 24
PAGE = 5
STALL_AFTER = 8  # past the first page and into the second


class CountingWriter(LocalFolderHistoryWriter):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.written: list[str] = []
        self._lock = threading.Lock()

    def write(self, **kwargs: Any) -> None:
        super().write(**kwargs)
        with self._lock:
            self.written.append(kwargs["instance_id"])


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, f"the worker process exited early with {proc.returncode}"
        assert time.monotonic() < deadline, f"{path.name} did not appear within {seconds}s"
        time.sleep(0.05)


def test_a_job_resumes_on_a_new_worker_after_sigkill_and_exports_each_instance_once(
    export_hub: ExportHub, tmp_path: Path, short_waits: None
) -> None:
    setup = export_hub.export_client(LocalFolderHistoryWriter(tmp_path / "unused"))
    ids = export_hub.run_instances([f"n{k}" for k in range(INSTANCES)], prefix="k")
    for w in export_hub.workers:
        w.stop()
    port = export_hub.address.rsplit(":", 1)[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("stalling_worker.py")), port, export_hub.taskhub, str(tmp_path),
         str(STALL_AFTER)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        now = datetime.now(timezone.utc)
        setup.create_job(
            ExportJobCreationOptions(
                mode=ExportMode.BATCH,
                completed_time_from=now - timedelta(hours=1),
                completed_time_to=now + timedelta(hours=1),
                destination=ExportDestination(container="c"),
                max_instances_per_batch=PAGE,
                max_parallel_exports=PAGE,
            ),
            job_id="killed",
        )
        _wait_for(tmp_path / "stalled", proc, 60)
        before = setup.get_job("killed")
        assert before is not None and before.status is ExportJobStatus.ACTIVE
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    first_writes = (tmp_path / "writes.log").read_text().split()
    assert len(first_writes) == STALL_AFTER
    # A new worker, in this process, writing to the same folder.
    counting = CountingWriter(tmp_path / "files")
    resumed = export_hub.export_client(counting)
    final = resumed.wait_for_job("killed", timeout=90, poll_interval=0.2)
    assert final.status is ExportJobStatus.COMPLETED, final.last_error
    assert (final.scanned_instances, final.exported_instances, final.failed_instances) == (INSTANCES, INSTANCES, 0)
    # Pages committed before the kill are not exported again: those instances were written once, by the first worker.
    committed = before.exported_instances
    assert committed == PAGE
    files = sorted((tmp_path / "files" / "c").glob("*.jsonl.gz"))
    per_instance = Counter(read_exported_history(f).instance_id for f in files)
    assert sorted(per_instance) == sorted(ids) and set(per_instance.values()) == {1}
    # The new worker redid only what had not reported: never the committed first page, nothing twice, and at most
    # the one export whose result was on its way when the process died.
    second = counting.written
    assert not set(second) & set(ids[:PAGE])
    assert len(second) == len(set(second))
    assert set(first_writes) | set(second) == set(ids)
    assert len(set(first_writes) & set(second)) <= 1
