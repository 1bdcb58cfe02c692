"""The activity bodies, run directly against the emulator: what they refuse to export and why."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from durabletask import task
from durabletask.extensions.history_export import (
    ExportFormat,
    HistoryExportContext,
    LocalFolderHistoryWriter,
    build_activities,
    read_exported_history,
    run_export_instance_history,
    run_list_terminal_instances,
)
from tests.integration.history_export.conftest import ExportHub


def waits(ctx: task.OrchestrationContext, _: Any) -> Any:
    value = yield ctx.wait_for_external_event("go")
    return value


def _input(instance_id: str) -> dict[str, Any]:
    return {"instance_id": instance_id, "format": ExportFormat().to_dict(), "destination": {"container": "c"}}


def test_exports_only_terminal_instances_that_still_exist(export_hub: ExportHub, tmp_path: Path) -> None:
    w = export_hub.worker()
    w.add_orchestrator(waits)
    w.start()
    c = export_hub.client()
    running = c.schedule_new_orchestration(waits, instance_id="still-running")
    c.wait_for_orchestration_start(running, timeout=30)
    context = HistoryExportContext(client=c, writer=LocalFolderHistoryWriter(tmp_path))

    gone = run_export_instance_history(context, _input("never-existed"))
    assert gone == {
        "instance_id": "never-existed",
        "success": False,
        "error": "instance 'never-existed' no longer exists or has been purged",
    }
    busy = run_export_instance_history(context, _input(running))
    assert busy["success"] is False and busy["error"] == (
        "instance 'still-running' is no longer terminal (runtime_status=RUNNING)"
    )
    assert not (tmp_path / "c").exists()

    c.terminate_orchestration(running, output="stopped")
    c.wait_for_orchestration_completion(running, timeout=30)
    assert run_export_instance_history(context, _input(running)) == {
        "instance_id": running,
        "success": True,
        "error": None,
    }
    [written] = (tmp_path / "c").iterdir()
    exported = read_exported_history(written)
    assert exported.metadata is not None and exported.metadata["runtime_status"] == "TERMINATED"

    now = datetime.now(timezone.utc)
    page = run_list_terminal_instances(
        context,
        {
            "completed_time_from": (now - timedelta(hours=1)).isoformat(),
            "completed_time_to": (now + timedelta(hours=1)).isoformat(),
            "runtime_status": ["TERMINATED"],
            "page_size": 10,
        },
    )
    assert page == {"instance_ids": [running], "continuation_token": None}


def test_bad_activity_input_is_refused_naming_the_field(export_hub: ExportHub, tmp_path: Path) -> None:
    context = HistoryExportContext(client=export_hub.client(), writer=LocalFolderHistoryWriter(tmp_path))
    with pytest.raises(ValueError, match="completed_time_from"):
        run_list_terminal_instances(context, {})
    with pytest.raises(ValueError, match=r"destination\.container is required"):
        run_export_instance_history(context, {"instance_id": "i", "destination": {}})
    listing, export = build_activities(lambda: context)
    assert (listing.__name__, export.__name__) == ("list_terminal_instances", "export_instance_history")
