"""What the dashboard's pages contain, computed without a browser or a server."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from dtscale_emulator.dashboard import diagnose, views
from dtscale_emulator.dashboard.hubs import parse_json
from dtscale_emulator.dashboard.models import HistoryEntry, InstanceRow, history_entry, instance_row
from dtscale_emulator.protocol import StringValue, Timestamp, pb

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def stamp(value: datetime) -> Any:
    found = Timestamp()
    found.FromDatetime(value)
    return found


def state(instance_id: str = "i", name: str = "flow", status: str = "COMPLETED", **kw: Any) -> InstanceRow:
    """An instance as the backend reports it, read by the dashboard."""
    message = pb.OrchestrationState(
        instanceId=instance_id,
        name=name,
        orchestrationStatus=getattr(pb, f"ORCHESTRATION_STATUS_{status}"),
        createdTimestamp=stamp(kw.pop("created", T0)),
        lastUpdatedTimestamp=stamp(T0 + timedelta(seconds=9)),
        tags=kw.pop("tags", {}),
    )
    if "version" in kw:
        message.version.CopyFrom(StringValue(value=kw.pop("version")))
    if "scheduled_start_at" in kw:
        message.scheduledStartTimestamp.CopyFrom(stamp(kw.pop("scheduled_start_at")))
    assert not kw, f"unknown fields {kw}"
    return instance_row(message)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def event(kind: str, event_id: int, when: datetime, **fields: Any) -> HistoryEntry:
    """A history event of ``kind`` (the protocol's ``eventType`` name) from the backend, read by the dashboard."""
    message = pb.HistoryEvent(eventId=event_id, timestamp=stamp(when))
    getattr(message, kind).SetInParent()
    for name, value in fields.items():
        target = getattr(message, kind)
        if isinstance(value, datetime):
            getattr(target, name).CopyFrom(stamp(value))
        elif isinstance(value, str) and name in ("input", "version", "result"):
            getattr(target, name).CopyFrom(StringValue(value=value))
        elif isinstance(value, dict):
            getattr(target, name).CopyFrom(pb.TaskFailureDetails(**value))
        else:
            setattr(target, name, value)
    return history_entry(message)


def test_filters_parse_from_the_url_and_bad_ones_name_the_parameter() -> None:
    flt = views.ListFilter.parse({"status": "failed,running", "from": "2026-01-01T00:00", "tag": "a=b"}, cursor="k")
    assert flt.statuses == ("FAILED", "RUNNING") and flt.cursor == "k" and flt.created_from == T0
    with pytest.raises(views.FilterError, match="status: unknown DONE"):
        views.ListFilter.parse({"status": "done"})
    with pytest.raises(views.FilterError, match="from: 'yesterday' is not an ISO 8601 time"):
        views.ListFilter.parse({"from": "yesterday"})
    with pytest.raises(views.FilterError, match="size must be between 1 and 200"):
        views.ListFilter.parse({"size": "500"})


def test_name_and_tag_filter_locally() -> None:
    states = [state(f"i{n}", "Flow" if n % 2 else "other", created=at(n), tags={"team": "a" if n < 4 else "b"})
              for n in range(8)]  # fmt: skip
    picked = [s.instance_id for s in states if views.ListFilter(name="flow", tag="team=a").matches_locally(s)]
    assert picked == ["i1", "i3"]
    assert all(views.ListFilter(tag="team").matches_locally(s) for s in states)
    assert not any(views.ListFilter(tag="team=c").matches_locally(s) for s in states)


def test_history_rows_name_what_each_completion_completes() -> None:
    events = [
        event("executionStarted", -1, at(0), name="flow"),
        event("taskScheduled", 3, at(1), name="charge", input="42"),
        event("taskFailed", -1, at(2), taskScheduledId=3, failureDetails={"errorMessage": "no", "errorType": "E"}),
        event("executionCompleted", -1, at(3), orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED),
    ]
    rows = views.history_rows(events)
    assert [(r["kind"], r["name"], r["completes"]) for r in rows] == [
        ("ExecutionStarted", "flow", None), ("TaskScheduled", "charge", None), ("TaskFailed", "charge", 3),
        ("ExecutionCompleted", "", None),
    ]  # fmt: skip
    assert rows[1]["fields"]["input"] == "42" and rows[3]["fields"]["orchestration_status"] == "FAILED"


def test_timeline_shows_retries_their_delays_and_unfinished_work() -> None:
    events = [
        event("executionStarted", -1, at(0), name="flow"),
        event("taskScheduled", 1, at(1), name="flaky"),
        event("taskFailed", -1, at(2), taskScheduledId=1),
        event("timerCreated", 2, at(2), fireAt=at(3)),
        event("timerFired", -1, at(3), fireAt=at(3), timerId=2),
        event("taskScheduled", 1, at(3), name="flaky"),
        event("taskCompleted", -1, at(4), taskScheduledId=1),
        event("subOrchestrationInstanceCreated", 4, at(5), instanceId="child", name="sub"),
    ]
    bars = views.timeline_bars(events, state(status="RUNNING"))
    assert [(b["kind"], b["name"], b["attempt"], b["outcome"], b["sequence_id"]) for b in bars] == [
        ("orchestration", "flow", 1, "running", None),
        ("activity", "flaky", 1, "failed", 1),
        ("timer", "retry delay", 1, "completed", 2),
        ("activity", "flaky", 2, "completed", 1),
        ("sub-orchestration", "sub", 1, "running", 4),
    ]
    assert bars[4]["end"] is None
    page = views.instance_json(state(status="RUNNING"), events)
    assert page["children"] == [{"instance_id": "child", "name": "sub"}]


def test_times_carry_their_zone() -> None:
    assert views.iso(datetime(2026, 1, 1)) == "2026-01-01T00:00:00+00:00"  # a naive time is UTC


def test_bad_json_names_the_field() -> None:
    assert parse_json(' {"a": 1} ', "input") == {"a": 1} and parse_json("  ", "input") is None
    with pytest.raises(ValueError, match=r"event data is not valid JSON: .*line 1, column 2"):
        parse_json("{yes", "event data")


def test_pending_reason_names_the_orchestration_no_worker_takes() -> None:
    pending = state(status="PENDING", version="2.0")
    takes_flow = {"orchestrations": [{"name": "flow", "versions": ["1.0"]}]}
    assert diagnose.pending_reason(state(status="RUNNING"), None) is None
    assert "cannot tell" in str(diagnose.pending_reason(pending, None))
    assert "No worker is connected" in str(diagnose.pending_reason(pending, {"workers": []}))
    reason = diagnose.pending_reason(pending, {"workers": [takes_flow]})
    assert reason == (
        "None of the 1 connected worker(s) takes orchestration 'flow' version '2.0': their work-item filters "
        "leave it out."
    )
    assert "should start shortly" in str(diagnose.pending_reason(pending, {"workers": [{"orchestrations": None}]}))
    later = state(status="PENDING", scheduled_start_at=datetime.now(timezone.utc) + timedelta(hours=1))
    assert "scheduled to start" in str(diagnose.pending_reason(later, {"workers": []}))
