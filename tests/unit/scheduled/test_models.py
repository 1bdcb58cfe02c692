"""Schedule models without a server: validation, the transition table, and the stored shapes."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta, timezone

import pytest

from durabletask.scheduled import ScheduleCreationOptions, ScheduleQuery, ScheduleStatus, ScheduleUpdateOptions
from durabletask.scheduled import transitions as tr
from durabletask.scheduled._wire import parse_timespan, timespan_text
from durabletask.scheduled.models import ScheduleConfiguration, ScheduleState

A, P, U = ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.UNINITIALIZED
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)

ALLOWED = {
    (tr.CREATE_SCHEDULE, U, A),
    (tr.CREATE_SCHEDULE, A, A),
    (tr.CREATE_SCHEDULE, P, A),
    (tr.UPDATE_SCHEDULE, A, A),
    (tr.UPDATE_SCHEDULE, P, P),
    (tr.PAUSE_SCHEDULE, A, P),
    (tr.RESUME_SCHEDULE, P, A),
}


@pytest.mark.parametrize(
    ("operation", "source", "target"),
    list(
        itertools.product(
            [tr.CREATE_SCHEDULE, tr.UPDATE_SCHEDULE, tr.PAUSE_SCHEDULE, tr.RESUME_SCHEDULE, "x"], [U, A, P], [U, A, P]
        )
    ),
)
def test_the_transition_table(operation: str, source: ScheduleStatus, target: ScheduleStatus) -> None:
    assert tr.is_valid_transition(operation, source, target) == ((operation, source, target) in ALLOWED)


def test_statuses_are_stored_as_the_dotnet_ordinals_and_read_leniently() -> None:
    assert [s.to_dotnet_ordinal() for s in (U, A, P)] == [0, 1, 2]
    assert [ScheduleStatus.from_dotnet(v) for v in (0, 1, 2, "2", " active ", "PAUSED")] == [U, A, P, P, A, P]
    for odd in (None, True, 7, -1, "Unknown", "nonsense"):
        assert ScheduleStatus.from_dotnet(odd) == U


@pytest.mark.parametrize(
    ("interval", "text"),
    [
        (timedelta(seconds=1), "00:00:01"),
        (timedelta(hours=26, minutes=3, seconds=4), "1.02:03:04"),
        (timedelta(seconds=1, microseconds=500_000), "00:00:01.5000000"),
        (timedelta(days=-1, hours=23), "-01:00:00"),
    ],
)
def test_intervals_are_dotnet_timespans(interval: timedelta, text: str) -> None:
    assert timespan_text(interval) == text
    assert parse_timespan(text) == interval


def test_a_malformed_timespan_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"interval '5 minutes' is not a \.NET TimeSpan"):
        parse_timespan("5 minutes")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"interval": timedelta(0)}, "interval must be positive"),
        ({"interval": timedelta(seconds=-5)}, "interval must be positive"),
        ({"interval": timedelta(milliseconds=999)}, "interval must be at least 1 second"),
        ({}, "interval is required"),
        ({"interval": timedelta(minutes=1), "cron": "* * * * *"}, "interval and cron cannot both be set"),
        ({"interval": timedelta(minutes=1), "time_zone": "UTC"}, "time_zone applies to cron schedules only"),
    ],
)
def test_creation_options_refuse_bad_timing_naming_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScheduleCreationOptions("s", "o", **kwargs)  # type: ignore[arg-type]


def test_creation_options_need_an_id_and_an_orchestration() -> None:
    with pytest.raises(ValueError, match="schedule_id cannot be empty"):
        ScheduleCreationOptions("", "o", timedelta(seconds=5))
    with pytest.raises(ValueError, match="orchestration_name cannot be empty"):
        ScheduleCreationOptions("s", "", timedelta(seconds=5))


def test_the_configuration_refuses_an_end_before_the_start() -> None:
    options = ScheduleCreationOptions("s", "o", timedelta(seconds=5), start_at=T0, end_at=T0 - timedelta(seconds=1))
    with pytest.raises(ValueError, match="start_at cannot be later than end_at"):
        ScheduleConfiguration.from_create_options(options)
    config = ScheduleConfiguration.from_create_options(ScheduleCreationOptions("s", "o", timedelta(seconds=5)))
    config.update(ScheduleUpdateOptions(end_at=T0))
    with pytest.raises(ValueError, match="start_at cannot be later than end_at"):
        config.update(ScheduleUpdateOptions(start_at=T0 + timedelta(days=1)))


def test_options_travel_as_the_json_microsofts_entity_reads() -> None:
    options = ScheduleCreationOptions("s", "o", timedelta(minutes=2), {"k": 1}, "fixed", T0, None, True)
    assert options.to_json() == {
        "schedule_id": "s",
        "orchestration_name": "o",
        "interval_seconds": 120.0,
        "orchestration_input": {"k": 1},
        "orchestration_instance_id": "fixed",
        "start_at": "2030-01-01T12:00:00+00:00",
        "end_at": None,
        "start_immediately_if_late": True,
    }
    assert ScheduleCreationOptions.from_json(options.to_json()) == options
    update = ScheduleUpdateOptions(interval=timedelta(seconds=30))
    assert ScheduleUpdateOptions.from_json(update.to_json()) == update


def test_the_state_is_stored_in_the_dotnet_shape() -> None:
    state = ScheduleState()
    state.status = A
    state.execution_token = "tok"
    state.schedule_created_at = state.schedule_last_modified_at = T0
    state.next_run_at = T0 + timedelta(minutes=1)
    options = ScheduleCreationOptions("s", "o", timedelta(minutes=1), {"k": [1, 2]})
    state.schedule_configuration = ScheduleConfiguration.from_create_options(options)
    stored = state.to_json()
    assert stored == {
        "Status": 1,
        "ExecutionToken": "tok",
        "LastRunAt": None,
        "NextRunAt": "2030-01-01T12:01:00+00:00",
        "ScheduleCreatedAt": "2030-01-01T12:00:00+00:00",
        "ScheduleLastModifiedAt": "2030-01-01T12:00:00+00:00",
        "ScheduleConfiguration": {
            "ScheduleId": "s",
            "OrchestrationName": "o",
            "Interval": "00:01:00",
            "OrchestrationInput": '{"k": [1, 2]}',
            "OrchestrationInstanceId": None,
            "StartAt": None,
            "EndAt": None,
            "StartImmediatelyIfLate": False,
        },
    }
    again = ScheduleState.from_json(json.loads(json.dumps(stored))).to_description()
    assert again == state.to_description()
    assert again.orchestration_input == {"k": [1, 2]}


def test_states_older_python_workers_wrote_still_load() -> None:
    legacy = {
        "status": "Paused",
        "execution_token": "t",
        "next_run_at": "2030-01-01T12:00:00Z",
        "schedule_configuration": {
            "schedule_id": "s",
            "orchestration_name": "o",
            "interval_seconds": 90,
            "orchestration_input": {"a": 1},
        },
    }
    described = ScheduleState.from_json(legacy).to_description()
    assert described.status == P and described.interval == timedelta(seconds=90)
    assert described.next_run_at == T0 and described.orchestration_input == {"a": 1}
    # A state without a token keeps a fresh one rather than None, which would make every wake-up stale.
    assert ScheduleState.from_json({"Status": 1}).execution_token


def test_query_bounds_become_utc_and_page_size_must_be_positive() -> None:
    query = ScheduleQuery(created_from=datetime(2030, 1, 1))
    assert query.created_from == datetime(2030, 1, 1, tzinfo=timezone.utc)
    assert ScheduleQuery.DEFAULT_PAGE_SIZE == 100
    with pytest.raises(ValueError, match="page_size must be positive"):
        ScheduleQuery(page_size=-1)


@pytest.mark.parametrize(
    ("cron", "period"),
    [("0 2 * * *", "1.00:00:00"), ("0 9 * * 1", "7.00:00:00"), ("*/15 * * * *", "00:15:00")],
)
def test_a_cron_schedule_stores_its_period_as_the_interval_for_readers_without_cron(cron: str, period: str) -> None:
    options = ScheduleCreationOptions("s", "o", cron=cron, time_zone="Europe/Paris")
    stored = ScheduleConfiguration.from_create_options(options).to_json()
    assert stored["Interval"] == period
    assert (stored["CronExpression"], stored["TimeZone"]) == (cron, "Europe/Paris")
    again = ScheduleConfiguration.from_json(stored)
    assert (again.cron, again.time_zone, again.interval) == (cron, "Europe/Paris", None)
