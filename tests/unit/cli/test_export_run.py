"""The command-line exporter without a server: pages, checkpoint, resume, retries and progress lines."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from durabletask._cli import export_progress
from durabletask._cli.export_checkpoint import Checkpoint, CheckpointMismatchError
from durabletask._cli.export_run import Exporter, Progress, Selection
from durabletask.client import OrchestrationStatus

SEL = Selection(datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 2, 1, tzinfo=timezone.utc),
                [OrchestrationStatus.FAILED], page_size=3)  # fmt: skip


@dataclass
class Page:
    items: list[str]
    continuation_token: str | None


class Lister:
    """Pages of 3 from a fixed list; tokens are opaque ("p1", "p2", ...), as a service may make them."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.calls: list[str | None] = []

    def list_instance_ids(self, runtime_status: Any = None, completed_time_from: Any = None,
                          completed_time_to: Any = None, page_size: Any = None,
                          continuation_token: str | None = None) -> Page:  # fmt: skip
        assert runtime_status == [OrchestrationStatus.FAILED] and page_size == 3
        self.calls.append(continuation_token)
        start = 0 if continuation_token is None else int(continuation_token[1:]) * 3
        more = start + 3 < len(self.ids)
        return Page(self.ids[start : start + 3], f"p{start // 3 + 1}" if more else None)


class Interrupted(BaseException):
    pass


def test_a_run_interrupted_mid_page_resumes_without_repeating(tmp_path: Path) -> None:
    ids = [f"i{n}" for n in range(8)]
    written: list[str] = []

    def crash_at_five(iid: str) -> str | None:
        if iid == "i5":
            raise Interrupted
        written.append(iid)
        return None

    cp = Checkpoint.open(tmp_path / "cp.json", {"x": 1})
    with pytest.raises(Interrupted):
        Exporter(Lister(ids), crash_at_five, cp, parallel=1).run(SEL)
    saved = json.loads((tmp_path / "cp.json").read_text())
    assert (saved["page_token"], saved["done_in_page"], saved["exported"]) == ("p1", ["i3", "i4"], 5)

    lister = Lister(ids)
    again = Checkpoint.open(tmp_path / "cp.json", {"x": 1})

    def record(iid: str) -> str | None:
        written.append(iid)
        return None

    summary = Exporter(lister, record, again, parallel=2).run(SEL)
    assert sorted(written) == ids  # each once
    assert lister.calls == ["p1", "p2"]  # the finished first page is not listed again
    assert (summary.exported_now, summary.skipped, summary.exported_total, summary.complete) == (3, 2, 8, True)


class CountingCheckpoint(Checkpoint):
    saves = 0

    def save(self) -> None:
        type(self).saves += 1
        super().save()


def test_the_checkpoint_is_saved_once_a_second_and_at_each_page_end_not_per_instance(tmp_path: Path) -> None:
    ticks = iter(n * 0.4 for n in range(1000))  # every look at the clock finds it 0.4 s later

    cp = CountingCheckpoint.open(tmp_path / "cp.json", {"x": 1})
    exporter = Exporter(
        Lister([f"i{n}" for n in range(8)]), lambda iid: None, cp, parallel=1, clock=lambda: next(ticks)
    )
    assert exporter.run(SEL).exported_total == 8
    # The start; within the first two pages once each, at the third instance (1.2 s after the last save); three
    # page ends; the run's end. After every instance it would have been 1 + 8 + 3.
    assert CountingCheckpoint.saves == 1 + 2 + 3 + 1
    saved = json.loads((tmp_path / "cp.json").read_text())
    assert (saved["complete"], saved["exported"]) == (True, 8)


def test_failures_are_kept_and_retried_by_the_next_run(tmp_path: Path) -> None:
    ids = ["a", "b", "c", "d"]
    cp = Checkpoint.open(tmp_path / "cp.json", {})
    first = Exporter(Lister(ids), lambda iid: "gone" if iid in ("b", "d") else None, cp).run(SEL)
    assert first.failed == {"b": "gone", "d": "gone"} and first.exported_total == 2 and first.complete
    tried: list[str] = []

    def fixed(iid: str) -> str | None:
        tried.append(iid)
        return "still gone" if iid == "d" else None

    second = Exporter(Lister(ids), fixed, Checkpoint.open(tmp_path / "cp.json", {})).run(SEL)
    assert sorted(tried) == ["b", "d"] and second.failed == {"d": "still gone"} and second.exported_total == 3


def test_a_checkpoint_of_other_parameters_is_refused(tmp_path: Path) -> None:
    Checkpoint(tmp_path / "cp.json", {"since": "a"}).save()
    with pytest.raises(CheckpointMismatchError, match="belongs to another export"):
        Checkpoint.open(tmp_path / "cp.json", {"since": "b"})
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(CheckpointMismatchError, match="is unreadable"):
        Checkpoint.open(tmp_path / "bad.json", {})


def test_plain_progress_lines_are_spaced_and_the_last_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(export_progress.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    show = export_progress.reporter(out)  # not a terminal: lines
    for done in range(1, 6):
        show(Progress(done, 5, done, 0))
        clock[0] += 0.4
    assert out.getvalue() == "exported 1/5 (1 this run, 0 failed)\n"  # the others came within 2 s
    show.close()
    assert out.getvalue().splitlines() == ["exported 1/5 (1 this run, 0 failed)", "exported 5/5 (5 this run, 0 failed)"]
