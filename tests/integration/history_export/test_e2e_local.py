"""Export jobs end to end on the emulator, written to a local folder."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from durabletask.client import OrchestrationStatus
from durabletask.extensions.history_export import (
    ExportDestination,
    ExportJobCreationOptions,
    ExportJobStatus,
    ExportMode,
    LocalFolderHistoryWriter,
    read_exported_history,
)
from durabletask.history import ExecutionCompletedEvent, ExecutionStartedEvent
from tests.integration.history_export.conftest import ExportHub


def _window() -> tuple[datetime, datetime]:
    now = datetime.now(timezone.utc)
    return now - timedelta(hours=1), now + timedelta(hours=1)


def test_batch_export_writes_one_file_per_terminal_instance(
    export_hub: ExportHub, tmp_path: Path, short_waits: None
) -> None:
    exporter = export_hub.export_client(LocalFolderHistoryWriter(tmp_path))
    ids = export_hub.run_instances(["ada", "bob", "fail-cy", "dan", "eve"])
    start, end = _window()
    job = exporter.create_job(
        ExportJobCreationOptions(
            mode=ExportMode.BATCH,
            completed_time_from=start,
            completed_time_to=end,
            destination=ExportDestination(container="exports", prefix="run1"),
            max_instances_per_batch=2,
            max_parallel_exports=2,
        ),
        job_id="job-one",
    )
    final = exporter.get_job_client(job.job_id).wait(timeout=60, poll_interval=0.2)
    assert final.status is ExportJobStatus.COMPLETED, final.last_error
    assert (final.scanned_instances, final.exported_instances, final.failed_instances) == (5, 5, 0)
    files = sorted((tmp_path / "exports" / "run1").glob("*.jsonl.gz"))
    exported = {read_exported_history(f).instance_id: read_exported_history(f) for f in files}
    assert sorted(exported) == sorted(ids) and len(files) == len(ids)
    failed = exported[ids[2]]
    assert failed.metadata is not None and failed.metadata["runtime_status"] == OrchestrationStatus.FAILED.name
    events = exported[ids[0]].events()
    assert isinstance(events[0], ExecutionStartedEvent) or any(isinstance(e, ExecutionStartedEvent) for e in events)
    assert any(isinstance(e, ExecutionCompletedEvent) for e in events)


def test_a_dedicated_export_worker_beside_the_app_worker_with_work_item_filters(
    export_hub: ExportHub, tmp_path: Path, short_waits: None
) -> None:
    from tests.integration.history_export.conftest import greet, hello

    app = export_hub.worker()
    app.add_orchestrator(greet)
    app.add_activity(hello)
    app.use_work_item_filters()
    app.start()
    exporter = export_hub.export_client(LocalFolderHistoryWriter(tmp_path), start_worker=False)
    dedicated = export_hub.worker()
    exporter.register_worker(dedicated)
    dedicated.use_work_item_filters()
    dedicated.start()
    ids = export_hub.run_instances(["ada", "bob"], prefix="f")
    start, end = _window()
    exporter.create_job(
        ExportJobCreationOptions(
            mode=ExportMode.BATCH,
            completed_time_from=start,
            completed_time_to=end,
            destination=ExportDestination(container="exports"),
        ),
        job_id="dedicated",
    )
    final = exporter.wait_for_job("dedicated", timeout=60, poll_interval=0.2)
    assert final.status is ExportJobStatus.COMPLETED and final.exported_instances == len(ids)
    assert sorted(read_exported_history(f).instance_id for f in (tmp_path / "exports").iterdir()) == ids
