"""A worker process running export jobs whose writer stalls after a given number of files.

Usage: stalling_worker.py PORT TASKHUB ROOT STALL_AFTER

Each write is logged to ROOT/writes.log; once STALL_AFTER files are written, ROOT/stalled appears and every
further write blocks, so the test can kill this process with exports in flight.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from durabletask import client, worker
from durabletask.extensions.history_export import ExportHistoryClient, LocalFolderHistoryWriter
from tests.integration.history_export.conftest import greet, hello


class StallingWriter:
    def __init__(self, root: Path, stall_after: int) -> None:
        self._inner = LocalFolderHistoryWriter(root / "files")
        self._root = root
        self._stall_after = stall_after
        self._written = 0
        self._lock = threading.Lock()

    def write(
        self,
        *,
        instance_id: str,
        container: str,
        blob_name: str,
        payload: bytes,
        content_type: str,
        content_encoding: str | None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        with self._lock:
            stall = self._written >= self._stall_after
            if not stall:
                self._written += 1
                self._inner.write(
                    instance_id=instance_id,
                    container=container,
                    blob_name=blob_name,
                    payload=payload,
                    content_type=content_type,
                    content_encoding=content_encoding,
                    metadata=metadata,
                )
                with open(self._root / "writes.log", "a") as log:
                    log.write(instance_id + "\n")
                if self._written == self._stall_after:
                    (self._root / "stalled").touch()
        if stall:
            time.sleep(3600)


def main() -> None:
    port, taskhub, root, stall_after = sys.argv[1:5]
    address, metadata = f"localhost:{port}", [("taskhub", taskhub)]
    exporter = ExportHistoryClient(
        client.TaskHubGrpcClient(host_address=address, metadata=metadata), StallingWriter(Path(root), int(stall_after))
    )
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=metadata)
    w.add_orchestrator(greet)
    w.add_activity(hello)
    exporter.register_worker(w)
    w.start()
    print("ready", flush=True)
    time.sleep(3600)


main()
