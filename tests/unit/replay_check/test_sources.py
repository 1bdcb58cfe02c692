"""Histories are read from export files of either format and from ``durabletask history --json`` dumps, and the
selection filters (instance, name, status) apply to files as they do to a task hub."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from durabletask._cli.render import Renderer
from durabletask._instance_models import OrchestrationStatus
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.extensions.history_export.models import ExportFormat, ExportFormatKind
from durabletask.extensions.history_export.serialization import serialize_history
from durabletask.testing import OrchestrationHistory, ReplayChecker, Verdict, histories_from_files, read_history_file
from tests.unit.replay.history import History

from .support import recorded
from .test_checker import order_with_check_first, waited_history, waited_order

FORMATS = {"json": ExportFormatKind.JSON, "jsonl.gz": ExportFormatKind.JSONL_GZIP}


def export_file(folder: Path, history: OrchestrationHistory, suffix: str = "jsonl.gz") -> Path:
    data = serialize_history(history.events, instance_id=history.instance_id, fmt=ExportFormat(FORMATS[suffix]))
    path = folder / f"{history.instance_id}.{suffix}"
    path.write_bytes(data)
    return path


def dump_file(folder: Path, history: OrchestrationHistory, name: str = "dump.json") -> Path:
    """What ``durabletask history ID --json > dump.json`` writes."""
    out = io.StringIO()
    Renderer(out, as_json=True).history(list(history.events))
    path = folder / name
    path.write_text(out.getvalue())
    return path


@pytest.mark.parametrize("suffix", sorted(FORMATS))
def test_an_export_file_reads_back_to_the_events_written(tmp_path: Path, suffix: str) -> None:
    history = recorded(waited_history("exp-1"))
    read = read_history_file(export_file(tmp_path, history, suffix))
    assert (read.instance_id, list(read.events)) == ("exp-1", list(history.events))
    assert read.source == str(tmp_path / f"exp-1.{suffix}")


def test_a_history_json_dump_reads_back_with_the_instance_id_of_its_start_event(tmp_path: Path) -> None:
    history = recorded(waited_history("dumped-7"))
    read = read_history_file(dump_file(tmp_path, history))
    assert (read.instance_id, list(read.events)) == ("dumped-7", list(history.events))


def test_a_dump_that_is_not_a_history_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps([{"instance_id": "x"}]))
    with pytest.raises(ValueError, match="item 0 is not a history event"):
        read_history_file(path)


def test_files_replay_or_diverge_like_the_histories_they_hold(tmp_path: Path) -> None:
    export_file(tmp_path, recorded(waited_history("a")), "json")
    export_file(tmp_path, recorded(waited_history("b")), "jsonl.gz")
    nested = tmp_path / "nested"  # folders are searched through
    nested.mkdir()
    dump_file(nested, recorded(waited_history("c")))
    for code, verdict in ((waited_order, Verdict.REPLAYS), (order_with_check_first, Verdict.DIVERGES)):
        report = ReplayChecker({"order": code}).check(histories_from_files([tmp_path]))
        assert sorted((r.instance_id, r.verdict) for r in report.results) == [(i, verdict) for i in "abc"]


def finished(instance_id: str, name: str, status: int) -> OrchestrationHistory:
    history = History(instance_id).started(name).task_scheduled(1, "a").orchestrator_completed()
    if status != pb.ORCHESTRATION_STATUS_RUNNING:
        history.orchestrator_started().task_completed(1).orchestrator_completed().execution_completed(status)
    return recorded(history)


def test_files_are_selected_by_instance_name_and_implied_status(tmp_path: Path) -> None:
    export_file(tmp_path, finished("r1", "order", pb.ORCHESTRATION_STATUS_RUNNING))
    export_file(tmp_path, finished("c1", "order", pb.ORCHESTRATION_STATUS_COMPLETED))
    export_file(tmp_path, finished("f1", "Billing", pb.ORCHESTRATION_STATUS_FAILED))

    def ids(**filters: Any) -> list[str]:
        return sorted(h.instance_id for h in histories_from_files([tmp_path], **filters))

    assert ids() == ["c1", "f1", "r1"]
    assert ids(instance_ids={"c1", "nope"}) == ["c1"]
    assert ids(names=["billing"]) == ["f1"]  # names compare case-insensitively
    assert ids(statuses=[OrchestrationStatus.RUNNING]) == ["r1"]
    assert ids(statuses=[OrchestrationStatus.COMPLETED, OrchestrationStatus.FAILED]) == ["c1", "f1"]
    assert ids(names=["order"], statuses=[OrchestrationStatus.FAILED]) == []
