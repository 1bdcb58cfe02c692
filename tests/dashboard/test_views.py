"""What the dashboard's pages contain, computed without a browser or a server."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dtscale_emulator.dashboard import diagnose, views
from dtscale_emulator.dashboard.hubs import parse_json
from durabletask import history
from durabletask._client.models import OrchestrationState, OrchestrationStatus
from durabletask.task import FailureDetails

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def state(instance_id: str = "i", name: str = "flow", status: str = "COMPLETED", **kw: object) -> OrchestrationState:
    return OrchestrationState(
        instance_id, name, OrchestrationStatus[status], kw.pop("created", T0), T0 + timedelta(seconds=9),  # type: ignore[arg-type]
        None, None, None, None, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


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
        history.ExecutionStartedEvent(-1, at(0), name="flow"),
        history.TaskScheduledEvent(3, at(1), name="charge", input="42"),
        history.TaskFailedEvent(-1, at(2), task_scheduled_id=3, failure_details=FailureDetails("no", "E", None)),
        history.ExecutionCompletedEvent(-1, at(3), orchestration_status=OrchestrationStatus.FAILED.value),
    ]
    rows = views.history_rows(events)
    assert [(r["kind"], r["name"], r["completes"]) for r in rows] == [
        ("ExecutionStarted", "flow", None), ("TaskScheduled", "charge", None), ("TaskFailed", "charge", 3),
        ("ExecutionCompleted", "", None),
    ]  # fmt: skip
    assert rows[1]["fields"]["input"] == "42" and rows[3]["fields"]["orchestration_status"] == "FAILED"


def test_timeline_shows_retries_their_delays_and_unfinished_work() -> None:
    events = [
        history.ExecutionStartedEvent(-1, at(0), name="flow"),
        history.TaskScheduledEvent(1, at(1), name="flaky"),
        history.TaskFailedEvent(-1, at(2), task_scheduled_id=1),
        history.TimerCreatedEvent(2, at(2), fire_at=at(3)),
        history.TimerFiredEvent(-1, at(3), fire_at=at(3), timer_id=2),
        history.TaskScheduledEvent(1, at(3), name="flaky"),
        history.TaskCompletedEvent(-1, at(4), task_scheduled_id=1),
        history.SubOrchestrationInstanceCreatedEvent(4, at(5), instance_id="child", name="sub"),
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
    assert views.iso(datetime(2026, 1, 1)) == "2026-01-01T00:00:00+00:00"  # the client's naive UTC


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
