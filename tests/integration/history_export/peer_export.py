"""Run by Microsoft's SDK in the peer interpreter, against our emulator.

Usage:
    peer_export.py export PORT TASKHUB CONNECTION_STRING CONTAINER FROM_ISO TO_ISO
        runs Microsoft's export job (its worker, entity, orchestration and Azure Blob writer) and prints the job.
    peer_export.py read FOLDER
        reads every exported file under FOLDER as Microsoft's exporter would have written it and prints a report.
    peer_export.py create PORT TASKHUB JOB_ID FROM_ISO TO_ISO
        creates a batch job with Microsoft's client only (a worker of ours runs it).
    peer_export.py describe PORT TASKHUB JOB_ID
        prints the job as Microsoft's client reads it.
"""

import gzip
import json
import sys
from datetime import datetime
from pathlib import Path

from durabletask import client, history, worker
from durabletask.extensions.history_export import (
    ExportDestination,
    ExportHistoryClient,
    ExportJobCreationOptions,
    ExportMode,
)
from durabletask.extensions.history_export import orchestrator as ms_orchestrator
from durabletask.extensions.history_export.activities import _blob_name_for
from durabletask.extensions.history_export.azure_blob import (
    AzureBlobHistoryExportWriter,
    AzureBlobHistoryExportWriterOptions,
)
from durabletask.extensions.history_export.models import ExportFormat


def export(port: str, taskhub: str, connection: str, container: str, start: str, end: str) -> None:
    from datetime import timedelta

    ms_orchestrator._BATCH_RETRY_BACKOFF_OVERRIDE = timedelta(milliseconds=200)
    address, metadata = f"localhost:{port}", [("taskhub", taskhub)]
    writer = AzureBlobHistoryExportWriter(
        AzureBlobHistoryExportWriterOptions(container_name=container, connection_string=connection)
    )
    c = client.TaskHubGrpcClient(host_address=address, metadata=metadata)
    exporter = ExportHistoryClient(c, writer)
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=metadata)
    exporter.register_worker(w)
    w.start()
    try:
        job = exporter.create_job(
            ExportJobCreationOptions(
                mode=ExportMode.BATCH,
                completed_time_from=datetime.fromisoformat(start),
                completed_time_to=datetime.fromisoformat(end),
                destination=ExportDestination(container=container, prefix="ms"),
                max_instances_per_batch=3,
            ),
            job_id="ms-job",
        )
        final = exporter.wait_for_job(job.job_id, timeout=90, poll_interval=0.2)
        print(
            json.dumps(
                {
                    "status": final.status.value,
                    "scanned": final.scanned_instances,
                    "exported": final.exported_instances,
                    "failed": final.failed_instances,
                    "last_error": final.last_error,
                }
            ),
            flush=True,
        )
    finally:
        w.stop()
        writer.close()


class _Unused:
    def write(self, **_: object) -> None:
        raise AssertionError("a client-only export client never writes")


def _client_only(port: str, taskhub: str) -> ExportHistoryClient:
    c = client.TaskHubGrpcClient(host_address=f"localhost:{port}", metadata=[("taskhub", taskhub)])
    return ExportHistoryClient(c, _Unused())


def create(port: str, taskhub: str, job_id: str, start: str, end: str) -> None:
    job = _client_only(port, taskhub).create_job(
        ExportJobCreationOptions(
            mode=ExportMode.BATCH,
            completed_time_from=datetime.fromisoformat(start),
            completed_time_to=datetime.fromisoformat(end),
            destination=ExportDestination(container="from-ms", prefix="p"),
            max_instances_per_batch=2,
        ),
        job_id=job_id,
    )
    print(json.dumps({"job_id": job.job_id}), flush=True)


def describe(port: str, taskhub: str, job_id: str) -> None:
    desc = _client_only(port, taskhub).get_job(job_id)
    jobs = [d.job_id for d in _client_only(port, taskhub).list_jobs()]
    print(
        json.dumps(
            {
                "status": desc.status.value,
                "exported": desc.exported_instances,
                "scanned": desc.scanned_instances,
                "container": desc.config.destination.container,
                "listed": jobs,
            }
        ),
        flush=True,
    )


def read(folder: str) -> None:
    report = {}
    event_names = {n for n in dir(history) if n.endswith("Event")}
    for path in sorted(Path(folder).rglob("*.jsonl.gz")):
        lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
        header = json.loads(lines[0])
        events = [json.loads(line) for line in lines[1:]]
        meta = header["metadata"]
        expected = _blob_name_for(
            instance_id=header["instance_id"],
            last_updated_at=datetime.fromisoformat(meta["last_updated_at"]),
            prefix=None,
            fmt=ExportFormat(),
        )
        report[header["instance_id"]] = {
            "kind": header["kind"],
            "schema_version": header["schema_version"],
            "runtime_status": meta["runtime_status"],
            "name_matches": expected == path.name,
            "unknown_event_types": sorted({e["event_type"] for e in events} - event_names),
            "events": len(events),
        }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    commands = {"export": export, "read": read, "create": create, "describe": describe}
    commands[sys.argv[1]](*sys.argv[2:])
