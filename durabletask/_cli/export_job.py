"""``durabletask export --job``: create a durable export job and follow it until it ends."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from typing import Any

from durabletask import client as dt_client
from durabletask._cli.arguments import UsageError
from durabletask._cli.export_run import Selection
from durabletask._cli.render import Renderer

POLL_SECONDS = 1.0


class _WorkerSideWriter:
    """The job's files are written by the worker running it; the client that creates the job writes none."""

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
        raise RuntimeError("export jobs are written by the worker that registered the export extension")


def _line(desc: Any) -> str:
    return (
        f"job {desc.job_id}: {desc.status.name} scanned {desc.scanned_instances} exported {desc.exported_instances} "
        f"failed {desc.failed_instances}"
    )


def follow_job(c: dt_client.TaskHubGrpcClient, a: argparse.Namespace, r: Renderer, sel: Selection) -> int:
    from durabletask.extensions.history_export import (
        ExportDestination,
        ExportHistoryClient,
        ExportJobCreationOptions,
        ExportJobStatus,
        ExportMode,
    )

    if a.blob_connection_string:
        raise UsageError("--job writes through the worker's writer: drop --blob-connection-string")
    try:
        options = ExportJobCreationOptions(
            mode=ExportMode.BATCH,
            completed_time_from=sel.since,
            completed_time_to=sel.until,
            destination=ExportDestination(container=a.to, prefix=a.prefix),
            runtime_status=list(sel.statuses),
            max_instances_per_batch=sel.page_size,
            max_parallel_exports=a.parallel,
        )
        options.to_configuration()
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    jobs = ExportHistoryClient(c, _WorkerSideWriter())
    job = jobs.create_job(options, job_id=a.job_id)
    if not r.as_json:
        r.line(f"created export job {job.job_id} (orchestration {job.orchestrator_instance_id})")
    deadline = time.monotonic() + a.timeout
    last, shown = None, ""
    while True:
        desc = jobs.get_job(job.job_id)
        if desc is not None:
            last = desc
            if not r.as_json and not a.no_progress and _line(desc) != shown:
                shown = _line(desc)
                sys.stderr.write(shown + "\n")
                sys.stderr.flush()
            if desc.status != ExportJobStatus.ACTIVE:
                break
        if time.monotonic() >= deadline:
            if last is None:
                raise TimeoutError(
                    f"no worker took up export job {job.job_id} within {a.timeout:g}s: run a worker that "
                    "registered the export extension (ExportHistoryClient.register_worker)"
                )
            raise TimeoutError(f"export job {job.job_id} still {last.status.name} after {a.timeout:g}s")
        time.sleep(POLL_SECONDS)
    _report(r, last)
    return 0 if last.status == ExportJobStatus.COMPLETED and last.failed_instances == 0 else 1


def _report(r: Renderer, desc: Any) -> None:
    if r.as_json:
        r.json(
            {
                "job_id": desc.job_id,
                "status": desc.status.name,
                "orchestration": desc.orchestrator_instance_id,
                "scanned": desc.scanned_instances,
                "exported": desc.exported_instances,
                "failed": [{"instance_id": f.instance_id, "error": f.reason} for f in desc.failures],
                "last_error": desc.last_error,
            }
        )
        return
    r.line(_line(desc))
    for failure in desc.failures:
        r.line(f"failed {failure.instance_id}: {failure.reason}")
    if desc.last_error:
        r.line(f"last error: {desc.last_error}")
