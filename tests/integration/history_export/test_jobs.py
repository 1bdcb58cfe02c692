"""Managing export jobs on the emulator: continuous mode, re-creating, listing, deleting, unknown jobs, asyncio."""

from __future__ import annotations

import logging
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from durabletask.extensions.history_export import (
    AsyncExportHistoryClient,
    ExportDestination,
    ExportHistoryClient,
    ExportJobCreationOptions,
    ExportJobDescription,
    ExportJobNotFoundError,
    ExportJobQuery,
    ExportJobStatus,
    ExportMode,
    LocalFolderHistoryWriter,
    orchestrator_instance_id_for,
    read_exported_history,
)
from tests.conftest import watch_log
from tests.integration.history_export.conftest import ExportHub


def _continuous(since: datetime) -> ExportJobCreationOptions:
    return ExportJobCreationOptions(
        mode=ExportMode.CONTINUOUS,
        completed_time_from=since,
        destination=ExportDestination(container="tail"),
        max_instances_per_batch=3,
    )


def _batch() -> ExportJobCreationOptions:
    now = datetime.now(timezone.utc)
    return ExportJobCreationOptions(
        mode=ExportMode.BATCH,
        completed_time_from=now - timedelta(hours=1),
        completed_time_to=now + timedelta(hours=1),
        destination=ExportDestination(container="batch"),
    )


def _exported(folder: Path) -> Counter[str]:
    return Counter(read_exported_history(f).instance_id for f in folder.glob("*.jsonl.gz"))


def _until(check: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def _checkpoints_after_all_counted(exporter: ExportHistoryClient, job_id: str, scanned: int, sweeps: int) -> None:
    """Waits until the job has counted ``scanned`` instances and then committed ``sweeps`` more checkpoints.

    Each commit ends a listing that began after the previous one was stored, so those listings all ran once
    every instance had been exported and counted.
    """

    def job() -> ExportJobDescription:
        return exporter.get_job(job_id) or pytest.fail(f"job {job_id!r} vanished")

    _until(lambda: job().scanned_instances >= scanned)
    stamps = {job().last_checkpoint_time}

    def more_checkpoints() -> bool:
        stamps.add(job().last_checkpoint_time)  # every commit stamps its own time
        return len(stamps) > sweeps

    _until(more_checkpoints)


def test_continuous_job_picks_up_instances_finishing_after_it_started_each_once(
    export_hub: ExportHub, tmp_path: Path, short_waits: None
) -> None:
    exporter = export_hub.export_client(LocalFolderHistoryWriter(tmp_path))
    before = export_hub.run_instances(["a", "b", "c", "d"], prefix="m")
    exporter.create_job(_continuous(datetime.now(timezone.utc) - timedelta(hours=1)), job_id="tail")
    folder = tmp_path / "tail"
    _until(lambda: set(_exported(folder)) == set(before))
    # IDs sorting before and after those already exported: a cursor over instance IDs alone would miss "a-…".
    later = export_hub.run_instances(["e", "f"], prefix="a") + export_hub.run_instances(["g", "h", "i"], prefix="z")
    _until(lambda: set(_exported(folder)) == set(before) | set(later))
    # Sweeps that listed after every instance was counted did not export any of them again.
    _checkpoints_after_all_counted(exporter, "tail", scanned=9, sweeps=2)
    counts = _exported(folder)
    assert set(counts.values()) == {1}
    desc = exporter.get_job("tail")
    assert desc is not None and desc.status is ExportJobStatus.ACTIVE
    assert (desc.scanned_instances, desc.exported_instances, desc.failed_instances) == (9, 9, 0)

    exporter.cancel_job("tail")
    assert exporter.get_job("tail") is None
    assert export_hub.client().get_orchestration_state(orchestrator_instance_id_for("tail")) is None


def test_an_active_job_keeps_its_configuration_when_created_again_but_a_finished_one_starts_over(
    export_hub: ExportHub, tmp_path: Path, short_waits: None, caplog: pytest.LogCaptureFixture
) -> None:
    worker_log = logging.getLogger(f"tests.integration.history_export.{export_hub.taskhub}")
    with watch_log(worker_log, "@exportjobentity@again: operation 'create' failed", logging.INFO) as refused:
        exporter = export_hub.export_client(LocalFolderHistoryWriter(tmp_path), logger=worker_log)
        export_hub.run_instances(["a", "b"], prefix="r")
        exporter.create_job(_continuous(datetime.now(timezone.utc) - timedelta(hours=1)), job_id="again")
        _until(lambda: exporter.get_job("again") is not None)
        # As with Microsoft's client, creating it again returns normally (an application may create its job at
        # every start); the running job refuses it and keeps its configuration, and the log says so.
        with caplog.at_level(logging.WARNING):
            exporter.create_job(_batch(), job_id="again")
        assert "export job 'again' is still Active: the job refuses a new create" in caplog.text
        refused.wait_for(1)  # the entity has run the signal, and refused it
    kept = exporter.get_job("again")
    assert kept is not None and kept.status is ExportJobStatus.ACTIVE and kept.config.mode is ExportMode.CONTINUOUS
    exporter.delete_job("again")

    exporter.create_job(_batch(), job_id="twice")
    first = exporter.wait_for_job("twice", timeout=60, poll_interval=0.2)
    assert first.status is ExportJobStatus.COMPLETED and first.exported_instances == 2
    submitted = exporter.create_job(_batch(), job_id="twice")
    # Creating is a signal: until the entity has run it, the job still shows the first run.
    _until(lambda: (exporter.get_job("twice") or first).created_at == submitted.created_at)
    second = exporter.wait_for_job("twice", timeout=60, poll_interval=0.2)
    assert second.status is ExportJobStatus.COMPLETED
    # Started over: the counters are those of the second run alone.
    assert (second.scanned_instances, second.exported_instances) == (2, 2)


def test_unknown_jobs_and_listing(export_hub: ExportHub, tmp_path: Path, short_waits: None) -> None:
    exporter = export_hub.export_client(LocalFolderHistoryWriter(tmp_path))
    assert exporter.get_job("nope") is None
    with pytest.raises(ExportJobNotFoundError) as raised:
        exporter.wait_for_job("nope", timeout=0.3, poll_interval=0.1)
    assert isinstance(raised.value, LookupError) and "'nope'" in str(raised.value)
    with pytest.raises(ValueError, match="timeout must be positive"):
        exporter.wait_for_job("nope", timeout=0)
    exporter.delete_job("nope")  # nothing to delete is not an error

    export_hub.run_instances(["a"], prefix="l")
    exporter.create_job(_batch(), job_id="done-1")
    exporter.wait_for_job("done-1", timeout=60, poll_interval=0.2)
    exporter.create_job(_continuous(datetime.now(timezone.utc)), job_id="live-1")
    _until(lambda: exporter.get_job("live-1") is not None)
    assert {d.job_id for d in exporter.list_jobs()} == {"done-1", "live-1"}
    active = exporter.list_jobs(ExportJobQuery(status=[ExportJobStatus.ACTIVE]))
    assert [d.job_id for d in active] == ["live-1"]
    exporter.delete_job("live-1")
    assert [d.job_id for d in exporter.list_jobs()] == ["done-1"]


async def test_async_client_creates_waits_lists_and_deletes(
    export_hub: ExportHub, tmp_path: Path, short_waits: None
) -> None:
    writer = LocalFolderHistoryWriter(tmp_path)
    sync_exporter: ExportHistoryClient = export_hub.export_client(writer)
    export_hub.run_instances(["a", "b"], prefix="as")
    async_client = export_hub.async_client()
    try:
        exporter = AsyncExportHistoryClient(async_client, writer)
        job = await exporter.create_job(_batch(), job_id="async-1")
        jobs = exporter.get_job_client(job.job_id)
        final = await jobs.wait(timeout=60, poll_interval=0.2)
        assert final.status is ExportJobStatus.COMPLETED and final.exported_instances == 2
        assert [d.job_id async for d in exporter.list_jobs()] == ["async-1"]
        with pytest.raises(ExportJobNotFoundError):
            await exporter.wait_for_job("missing", timeout=0.3, poll_interval=0.1)
        await jobs.delete()
        assert await jobs.describe() is None
        assert sync_exporter.get_job("async-1") is None
    finally:
        await async_client.close()
