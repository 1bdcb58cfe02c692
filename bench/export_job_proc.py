"""One export job, run to the end in this process: a worker with the history-export extension and its client.

Runs under either SDK (the API is the same): ours with PYTHONPATH at the repository, Microsoft's in the peer
interpreter. Prints one JSON line: seconds from creating the job to its end, its counts, and this process's
peak RSS.

Usage: export_job_proc.py ADDRESS TASKHUB FOLDER SINCE UNTIL
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from datetime import datetime

from durabletask import client, worker
from durabletask.extensions.history_export import (
    ExportDestination,
    ExportHistoryClient,
    ExportJobCreationOptions,
    ExportMode,
)


class FolderWriter:
    """FOLDER/<container>/<blob name>, written plainly (the same writer for both SDKs)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def write(self, *, instance_id: str, container: str, blob_name: str, payload: bytes, content_type: str,
              content_encoding: str | None, metadata: Mapping[str, str] | None = None) -> None:  # fmt: skip
        path = os.path.join(self.root, container, blob_name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(payload)


def _peak_rss_kb() -> int:
    # VmHWM, not ru_maxrss: Linux carries the parent's peak into ru_maxrss over a fork and exec.
    with open("/proc/self/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))


def main() -> None:
    address, taskhub, folder, since, until = sys.argv[1:6]
    metadata = [("taskhub", taskhub)]
    c = client.TaskHubGrpcClient(host_address=address, metadata=metadata)
    exporter = ExportHistoryClient(c, FolderWriter(folder))
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=metadata)
    exporter.register_worker(w)
    w.start()
    try:
        began = time.perf_counter()
        job = exporter.create_job(
            ExportJobCreationOptions(
                mode=ExportMode.BATCH,
                completed_time_from=datetime.fromisoformat(since),
                completed_time_to=datetime.fromisoformat(until),
                destination=ExportDestination(container="job"),
            )
        )
        final = exporter.wait_for_job(job.job_id, timeout=3600, poll_interval=0.5)
        seconds = time.perf_counter() - began
    finally:
        w.stop()
        c.close()
    print(json.dumps({
        "seconds": seconds,
        "status": final.status.name,
        "exported": final.exported_instances,
        "failed": final.failed_instances,
        "peak_rss_kb": _peak_rss_kb(),
    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
