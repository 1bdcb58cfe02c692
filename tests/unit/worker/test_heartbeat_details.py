"""Heartbeat details too long for a tag: the tag names the heartbeat, and the worker finds it in the history."""

from __future__ import annotations

import pytest

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay import activity_control as control
from durabletask._worker.heartbeat_details import find_details


def _settings(details: str | None) -> control.AttemptSettings:
    return control.AttemptSettings(
        attempt=2, entity_key="i#e", throttle_seconds=1.6, poll_seconds=1.0, reports_start=True, details=details
    )


def test_details_that_fit_stay_in_the_tag() -> None:
    settings = _settings('"page 3"').fitted((1, 4))
    assert settings.details == '"page 3"' and settings.details_at is None
    assert control.AttemptSettings.from_tag(settings.to_tag()) == settings


@pytest.mark.parametrize("size", [control.MAX_TAG_VALUE_CHARS, 60_000])
def test_details_that_would_make_the_tag_too_long_are_named_instead(size: int) -> None:
    settings = _settings('"' + "x" * size + '"').fitted((1, 4))
    assert settings.details is None and settings.details_at == (1, 4)
    assert len(settings.to_tag()) <= control.MAX_TAG_VALUE_CHARS
    assert control.AttemptSettings.from_tag(settings.to_tag()) == settings


def _raised(name: str, body: str) -> pb.HistoryEvent:
    event = pb.HistoryEvent(eventId=-1)
    event.eventRaised.name = name
    event.eventRaised.input.value = body
    return event


def test_the_named_heartbeat_is_the_nth_with_details_of_that_task() -> None:
    events = [
        _raised(control.CONTROL_EVENT, control.control_event(1, "start")),
        _raised(control.CONTROL_EVENT, control.control_event(1, "beat")),  # no details: not counted
        _raised(control.CONTROL_EVENT, control.control_event(1, "beat", '"first"')),
        _raised(control.CONTROL_EVENT, control.control_event(7, "beat", '"other task"')),
        _raised("user-event", control.control_event(1, "beat", '"not a control event"')),
        _raised(control.CONTROL_EVENT, '{"task": 1e400, "kind": "beat", "details": "\\"forged\\""}'),
        _raised(control.CONTROL_EVENT, control.control_event(1, "beat", '"second"')),
    ]
    assert find_details(events, (1, 1)) == '"first"'
    assert find_details(events, (1, 2)) == '"second"'
    assert find_details(events, (1, 3)) is None
    assert find_details(events, (7, 1)) == '"other task"'


def test_a_heartbeat_recorded_twice_counts_once_as_the_orchestration_counts_it() -> None:
    def beat(details: str, number: int, run: str = "r1") -> pb.HistoryEvent:
        return _raised(control.CONTROL_EVENT, control.control_event(1, "beat", details, run=run, number=number))

    events = [beat('"one"', 1), beat('"one"', 1), beat('"two"', 2), beat('"again"', 1, run="r2")]
    assert find_details(events, (1, 2)) == '"two"'
    assert find_details(events, (1, 3)) == '"again"'  # a new run (the attempt handed out anew) counts anew
