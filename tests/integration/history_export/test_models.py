"""Models, validation messages and the entity-state round trip of the history-export extension."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from durabletask.client import OrchestrationStatus
from durabletask.extensions.history_export import (
    ExportCheckpoint,
    ExportDestination,
    ExportFailure,
    ExportFilter,
    ExportFormat,
    ExportFormatKind,
    ExportJobConfiguration,
    ExportJobCreationOptions,
    ExportJobDescription,
    ExportJobState,
    ExportJobStatus,
    ExportMode,
    orchestrator_instance_id_for,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _options(**changes: object) -> ExportJobCreationOptions:
    fields: dict[str, object] = {
        "mode": ExportMode.BATCH,
        "completed_time_from": T0,
        "completed_time_to": T0 + timedelta(days=1),
        "destination": ExportDestination(container="c", prefix="p"),
    }
    fields.update(changes)
    return ExportJobCreationOptions(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"completed_time_to": T0 - timedelta(seconds=1)}, "completed_time_to must be strictly greater"),
        ({"completed_time_to": T0}, "completed_time_to must be strictly greater"),
        ({"completed_time_to": None}, "completed_time_to is required for batch"),
        ({"mode": ExportMode.CONTINUOUS}, "completed_time_to is not allowed for continuous"),
        ({"max_instances_per_batch": 0}, "max_instances_per_batch must be in [1, 1000]"),
        ({"max_instances_per_batch": 1001}, "max_instances_per_batch must be in [1, 1000]"),
        ({"max_parallel_exports": 0}, "max_parallel_exports must be positive"),
        ({"runtime_status": [OrchestrationStatus.RUNNING]}, "runtime_status may only contain terminal statuses"),
    ],
)
def test_invalid_options_raise_value_error_naming_the_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError) as raised:
        _options(**changes).to_configuration()
    assert field in str(raised.value)


def test_destination_needs_a_container() -> None:
    with pytest.raises(ValueError, match=r"destination\.container"):
        ExportDestination(container="")


def test_orchestrator_instance_id_is_derived_from_the_job_id() -> None:
    assert orchestrator_instance_id_for("j1") == "export-job-j1"
    with pytest.raises(ValueError, match="job_id"):
        orchestrator_instance_id_for("")


def test_filter_defaults_to_every_terminal_status_and_stores_wire_numbers() -> None:
    flt = ExportFilter(completed_time_from=T0)
    assert flt.effective_runtime_status() == [
        OrchestrationStatus.COMPLETED,
        OrchestrationStatus.FAILED,
        OrchestrationStatus.TERMINATED,
    ]
    stored = ExportFilter(completed_time_from=T0, runtime_status=[OrchestrationStatus.FAILED]).to_dict()
    assert stored["runtime_status"] == [OrchestrationStatus.FAILED.value]
    # Older state stored names, and numbers may come back as text: all three read the same.
    for value in (OrchestrationStatus.FAILED.value, "FAILED", str(OrchestrationStatus.FAILED.value)):
        again = ExportFilter.from_dict({**stored, "runtime_status": [value]})
        assert again.runtime_status == [OrchestrationStatus.FAILED]


def test_naive_times_are_read_as_utc() -> None:
    flt = ExportFilter.from_dict({"completed_time_from": "2026-01-01T00:00:00"})
    assert flt.completed_time_from == T0


def test_configuration_round_trips_and_a_missing_format_takes_the_default() -> None:
    config = _options(
        format=ExportFormat(kind=ExportFormatKind.JSON, schema_version="1.0"),
        runtime_status=[OrchestrationStatus.TERMINATED],
        max_instances_per_batch=7,
        max_parallel_exports=3,
    ).to_configuration()
    assert ExportJobConfiguration.from_dict(config.to_dict()) == config
    data = config.to_dict()
    del data["format"]
    assert ExportJobConfiguration.from_dict(data).format == ExportFormat()
    with pytest.raises(KeyError):
        ExportJobConfiguration.from_dict({**data, "format": {}})


def test_state_round_trips_through_plain_json_with_a_schema_version() -> None:
    state = ExportJobState.new(_options().to_configuration(), created_at=T0, orchestrator_instance_id="export-job-x")
    state.checkpoint = ExportCheckpoint(last_instance_key="i-00042")
    state.failures.append(ExportFailure("i-1", "boom", 3, T0))
    state.scanned_instances, state.exported_instances, state.failed_instances = 10, 9, 1
    stored = json.loads(json.dumps(state.to_dict()))
    assert stored["schema_version"] == "1.0" and stored["status"] == "Active"
    assert ExportJobState.from_dict(stored) == state
    desc = ExportJobDescription.from_state_dict("x", stored)
    assert (desc.job_id, desc.status, desc.exported_instances, desc.failures) == (
        "x",
        ExportJobStatus.ACTIVE,
        9,
        state.failures,
    )


def test_state_of_another_schema_version_is_refused() -> None:
    stored = ExportJobState.new(_options().to_configuration(), created_at=T0).to_dict()
    with pytest.raises(ValueError, match=r"schema_version='2\.0'"):
        ExportJobState.from_dict({**stored, "schema_version": "2.0"})
    with pytest.raises(ValueError, match="missing 'config'"):
        ExportJobState.from_dict({**stored, "config": None})


def test_sync_and_async_clients_have_the_same_operations() -> None:
    import inspect

    from durabletask.extensions.history_export import (
        AsyncExportHistoryClient,
        AsyncExportHistoryJobClient,
        ExportHistoryClient,
        ExportHistoryJobClient,
    )

    def operations(cls: type) -> dict[str, str]:
        # Parameters only: the async ones return awaitables and async iterators.
        return {
            name: str(inspect.signature(fn).replace(return_annotation=inspect.Signature.empty))
            for name, fn in vars(cls).items()
            if inspect.isfunction(fn) and not name.startswith("_")
        }

    sync_only = {"register_worker"}  # workers run activities with a sync client
    assert {k: v for k, v in operations(ExportHistoryClient).items() if k not in sync_only} == operations(
        AsyncExportHistoryClient
    )
    assert operations(ExportHistoryJobClient) == operations(AsyncExportHistoryJobClient)


PEER_ERRORS = """
import json, sys
from datetime import datetime, timedelta, timezone
from durabletask.client import OrchestrationStatus
from durabletask.extensions.history_export import ExportDestination, ExportJobCreationOptions, ExportMode
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
out = []
for case in json.loads(sys.argv[1]):
    fields = {"mode": ExportMode.BATCH, "completed_time_from": T0, "completed_time_to": T0 + timedelta(days=1),
              "destination": ExportDestination(container="c")}
    for key, value in case.items():
        if key == "mode":
            value = ExportMode(value)
        elif key == "completed_time_to" and value is not None:
            value = T0 + timedelta(seconds=value)
        elif key == "runtime_status":
            value = [OrchestrationStatus[v] for v in value]
        fields[key] = value
    try:
        ExportJobCreationOptions(**fields).to_configuration()
        out.append(None)
    except Exception as exc:
        out.append([type(exc).__name__, str(exc)])
print(json.dumps(out))
"""

PEER_CASES: list[dict[str, object]] = [
    {"completed_time_to": -1},
    {"completed_time_to": 0},
    {"completed_time_to": None},
    {"mode": "Continuous"},
    {"max_instances_per_batch": 0},
    {"max_parallel_exports": -3},
    {"runtime_status": ["RUNNING", "PENDING"]},
    {"runtime_status": ["FAILED"]},
]


@pytest.mark.interop
def test_validation_errors_are_microsofts(peer_py: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(peer_py), "-c", PEER_ERRORS, json.dumps(PEER_CASES)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    ours: list[list[str] | None] = []
    for case in PEER_CASES:
        changes: dict[str, object] = dict(case)
        if isinstance(mode := case.get("mode"), str):
            changes["mode"] = ExportMode(mode)
        if isinstance(offset := case.get("completed_time_to"), int):
            changes["completed_time_to"] = T0 + timedelta(seconds=offset)
        if isinstance(names := case.get("runtime_status"), list):
            changes["runtime_status"] = [OrchestrationStatus[str(v)] for v in names]
        try:
            _options(**changes).to_configuration()
            ours.append(None)
        except Exception as exc:
            ours.append([type(exc).__name__, str(exc)])
    assert ours == json.loads(done.stdout)
    assert ours[-1] is None and all(o is not None for o in ours[:-1])
