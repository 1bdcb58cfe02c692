"""Files written by our exporter are Microsoft's files, and the reverse, exporting the same instances.

Microsoft's export job runs in the peer interpreter on its own worker against our emulator and writes to Azurite
with Microsoft's Azure Blob writer; ours writes the same instances to a local folder. The files must have
the same names and contents, each SDK must read the other's, and Microsoft's blob naming must name ours.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from durabletask.extensions.history_export import (
    ExportDestination,
    ExportJobCreationOptions,
    ExportJobStatus,
    ExportMode,
    LocalFolderHistoryWriter,
    read_exported_history,
)
from durabletask.history import ExecutionCompletedEvent
from tests.integration.history_export.conftest import ExportHub
from tests.support.azurite import Azurite

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent


def _peer(peer_py: Path, cwd: Path, *args: str) -> dict[str, object]:
    # Run from outside the repository and without PYTHONPATH, so the peer imports Microsoft's durabletask.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(peer_py), str(HERE / "peer_export.py"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _without_fingerprint(data: bytes) -> bytes:
    """Microsoft's file text without the start fingerprint our client records in tags and our SDK never shows.

    Our history omits those tags (see docs/conformance.md), so the two exports of an instance started by our
    client differ there and nowhere else.
    """
    lines = []
    for line in gzip.decompress(data).decode("utf-8").splitlines():
        record = json.loads(line)
        if isinstance(record.get("tags"), dict):
            kept = {k: v for k, v in record["tags"].items() if not k.startswith("durabletask.fingerprint.")}
            record["tags"] = kept or None
        lines.append(json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def test_both_exporters_write_the_same_files_and_read_each_others(
    peer_py: Path, export_hub: ExportHub, azurite: Azurite, tmp_path: Path, short_waits: None
) -> None:
    from azure.storage.blob import BlobServiceClient

    ours = tmp_path / "ours"
    exporter = export_hub.export_client(LocalFolderHistoryWriter(ours))
    ids = export_hub.run_instances(["ada", "bob", "fail-cy", "dan"], prefix="x")
    start, end = datetime.now(timezone.utc) - timedelta(hours=1), datetime.now(timezone.utc) + timedelta(hours=1)
    exporter.create_job(
        ExportJobCreationOptions(
            mode=ExportMode.BATCH,
            completed_time_from=start,
            completed_time_to=end,
            destination=ExportDestination(container="exports", prefix="ms"),
        ),
        job_id="our-job",
    )
    assert exporter.wait_for_job("our-job", timeout=60, poll_interval=0.2).status is ExportJobStatus.COMPLETED
    for w in export_hub.workers:
        w.stop()  # from here on, only Microsoft's worker serves this task hub

    container = "msexports"
    port = export_hub.address.rsplit(":", 1)[1]
    job = _peer(
        peer_py, tmp_path, "export", port, export_hub.taskhub, azurite.connection_string, container,
        start.isoformat(), end.isoformat(),
    )  # fmt: skip
    assert job["status"] == "Completed", job
    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    blobs = service.get_container_client(container)
    theirs = {
        b.name.split("/", 1)[1]: blobs.download_blob(b.name, decompress=False).readall()
        for b in blobs.list_blobs(name_starts_with="ms/")
    }
    service.close()

    our_files = {p.name: p.read_bytes() for p in (ours / "exports" / "ms").iterdir()}
    assert len(our_files) == len(ids)
    for name, data in our_files.items():
        assert name in theirs, f"Microsoft's exporter gave {name} another name"
        assert _without_fingerprint(theirs[name]) == gzip.decompress(data), name
        # Compressed exactly as Microsoft's exporter compresses (gzip.compress with no time in the header).
        assert gzip.compress(gzip.decompress(data), mtime=0) == data

    read_back = {h.instance_id: h for h in (read_exported_history(data) for data in theirs.values())}
    assert set(ids) <= set(read_back)
    for instance_id in ids:
        assert any(isinstance(e, ExecutionCompletedEvent) for e in read_back[instance_id].events())

    report = _peer(peer_py, tmp_path, "read", str(ours))
    assert sorted(report) == sorted(ids)
    for instance_id, entry in report.items():
        assert isinstance(entry, dict)
        assert entry["kind"] == "metadata" and entry["schema_version"] == "1.0", entry
        assert entry["name_matches"] and entry["unknown_event_types"] == [], (instance_id, entry)
    assert isinstance(report[ids[2]], dict) and report[ids[2]]["runtime_status"] == "FAILED"


def test_microsofts_client_drives_a_job_run_by_our_worker(
    peer_py: Path, export_hub: ExportHub, tmp_path: Path, short_waits: None
) -> None:
    exporter = export_hub.export_client(LocalFolderHistoryWriter(tmp_path / "files"))
    ids = export_hub.run_instances(["ada", "bob", "cy"], prefix="y")
    start, end = datetime.now(timezone.utc) - timedelta(hours=1), datetime.now(timezone.utc) + timedelta(hours=1)
    port = export_hub.address.rsplit(":", 1)[1]
    hub = export_hub.taskhub
    assert _peer(peer_py, tmp_path, "create", port, hub, "ms-made", start.isoformat(), end.isoformat()) == {
        "job_id": "ms-made"
    }
    final = exporter.wait_for_job("ms-made", timeout=60, poll_interval=0.2)
    assert final.status is ExportJobStatus.COMPLETED and final.exported_instances == 3
    files = (tmp_path / "files" / "from-ms" / "p").iterdir()
    assert sorted(read_exported_history(f).instance_id for f in files) == ids
    # The state our entity wrote is the state Microsoft's client reads.
    assert _peer(peer_py, tmp_path, "describe", port, hub, "ms-made") == {
        "status": "Completed",
        "exported": 3,
        "scanned": 3,
        "container": "from-ms",
        "listed": ["ms-made"],
    }
