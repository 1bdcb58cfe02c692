"""The schedule entity run by the worker's entity runner with a fixed clock: what each operation sends."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._worker.entity_runner import EntityRunner
from durabletask.scheduled import ScheduleCreationOptions, ScheduleUpdateOptions
from durabletask.scheduled.schedule_entity import Schedule

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


class Entity:
    """One schedule entity's state, run one operation at a time at a time the test chooses."""

    def __init__(self) -> None:
        self.now = T0
        registry = Registry()
        registry.add_entity(type("Schedule", (Schedule,), {"clock": staticmethod(lambda: self.now)}), "schedule")
        self.runner = EntityRunner(registry)
        self.state: str | None = None

    def run(self, operation: str, value: Any = None, state: str | None = None) -> pb.EntityBatchResult:
        request = pb.EntityBatchRequest(instanceId="@schedule@s")
        current = state if state is not None else self.state
        if current is not None:
            request.entityState.value = current
        op = pb.OperationRequest(operation=operation, requestId="r")
        if value is not None:
            op.input.value = json.dumps(value)
        request.operations.append(op)
        result = self.runner.run(request, [], "tok")
        failure = result.results[0].failure
        assert not result.results[0].HasField("failure"), failure.failureDetails.errorMessage
        self.state = result.entityState.value if result.HasField("entityState") else None
        return result

    @property
    def stored(self) -> dict[str, Any]:
        assert self.state is not None
        return dict(json.loads(self.state))

    def wake(self) -> pb.EntityBatchResult:
        return self.run("run_schedule", self.stored["ExecutionToken"])


def starts(result: pb.EntityBatchResult) -> list[str]:
    return [a.startNewOrchestration.instanceId for a in result.actions if a.HasField("startNewOrchestration")]


def wake_ups(result: pb.EntityBatchResult) -> list[tuple[str, datetime | None]]:
    found = []
    for action in result.actions:
        if action.HasField("sendSignal") and action.sendSignal.name == "run_schedule":
            signal = action.sendSignal
            when = signal.scheduledTime.ToDatetime(timezone.utc) if signal.HasField("scheduledTime") else None
            found.append((json.loads(signal.input.value), when))
    return found


def create(entity: Entity, **kwargs: Any) -> pb.EntityBatchResult:
    kwargs.setdefault("interval", MINUTE)
    return entity.run("create_schedule", ScheduleCreationOptions("s", "report", **kwargs).to_json())


def test_create_arms_an_immediate_wake_up_that_arms_the_first_due_time() -> None:
    entity = Entity()
    created = create(entity)
    token = entity.stored["ExecutionToken"]
    assert wake_ups(created) == [(token, None)] and starts(created) == []
    armed = entity.wake()
    assert starts(armed) == [] and wake_ups(armed) == [(token, T0 + MINUTE)]
    assert entity.stored["NextRunAt"] == (T0 + MINUTE).isoformat()


def test_a_due_wake_up_starts_the_run_named_after_its_due_time_and_arms_the_next() -> None:
    entity = Entity()
    create(entity)
    entity.wake()
    entity.now = T0 + MINUTE
    fired = entity.wake()
    assert starts(fired) == [f"s-{(T0 + MINUTE).isoformat()}"]
    assert wake_ups(fired)[0][1] == T0 + 2 * MINUTE
    assert entity.stored["LastRunAt"] == (T0 + MINUTE).isoformat()


def test_a_redelivered_batch_starts_the_same_instance_id() -> None:
    # A worker killed before its result is accepted leaves the stored state as it was: the batch runs again.
    entity = Entity()
    create(entity)
    entity.wake()
    entity.now = T0 + MINUTE
    before, token = entity.state, entity.stored["ExecutionToken"]
    first = entity.run("run_schedule", token, state=before)
    entity.now = T0 + MINUTE + timedelta(seconds=20)  # the redelivery comes later
    second = entity.run("run_schedule", token, state=before)
    assert starts(first) == starts(second) == [f"s-{(T0 + MINUTE).isoformat()}"]


def test_an_early_or_stale_wake_up_starts_nothing() -> None:
    entity = Entity()
    create(entity)
    entity.wake()
    entity.now = T0 + timedelta(seconds=30)
    early = entity.wake()
    assert starts(early) == [] and wake_ups(early)[0][1] == T0 + MINUTE
    entity.now = T0 + MINUTE
    stale = entity.run("run_schedule", "an-old-token")
    assert stale.actions == [] and starts(stale) == []


def test_a_worker_clock_behind_the_last_run_does_not_start_it_again() -> None:
    entity = Entity()
    create(entity)
    entity.wake()
    entity.now = T0 + MINUTE
    assert starts(entity.wake()) == [f"s-{(T0 + MINUTE).isoformat()}"]
    entity.run("pause_schedule")
    entity.run("resume_schedule")
    entity.now = T0 + timedelta(seconds=30)  # another worker, its clock behind the one that started the run
    rearmed = entity.wake()
    assert starts(rearmed) == [] and wake_ups(rearmed)[0][1] == T0 + 2 * MINUTE


def test_update_of_the_timing_rearms_and_of_the_input_keeps_the_due_time() -> None:
    entity = Entity()
    create(entity)
    entity.wake()
    updated = entity.run("update_schedule", ScheduleUpdateOptions(orchestration_input=5).to_json())
    token = entity.stored["ExecutionToken"]
    assert wake_ups(updated) == [(token, None)] and entity.stored["NextRunAt"] == (T0 + MINUTE).isoformat()
    entity.run("update_schedule", ScheduleUpdateOptions(interval=MINUTE * 10).to_json())
    assert entity.stored["NextRunAt"] is None
    assert wake_ups(entity.wake())[0][1] == T0 + 10 * MINUTE
    same = entity.run("update_schedule", ScheduleUpdateOptions(interval=MINUTE * 10).to_json())
    assert same.actions == []  # nothing changed: no new token, no wake-up


def test_a_wake_up_after_delete_leaves_no_state() -> None:
    entity = Entity()
    create(entity)
    token = entity.stored["ExecutionToken"]
    entity.run("delete")
    assert entity.state is None
    entity.run("run_schedule", token)
    assert entity.state is None


@pytest.mark.parametrize(
    ("cron", "time_zone", "now", "due"),
    [
        ("*/15 * * * *", None, T0 + timedelta(minutes=1), T0 + timedelta(minutes=15)),
        # 02:30 in Paris is 01:30 UTC in winter.
        ("30 2 * * *", "Europe/Paris", T0, datetime(2030, 1, 2, 1, 30, tzinfo=timezone.utc)),
        # ... and 00:30 UTC in summer.
        (
            "30 2 * * *",
            "Europe/Paris",
            datetime(2030, 7, 1, tzinfo=timezone.utc),
            datetime(2030, 7, 1, 0, 30, tzinfo=timezone.utc),
        ),
        ("0 9 * * 1", "America/New_York", T0, datetime(2030, 1, 7, 14, 0, tzinfo=timezone.utc)),
    ],
)
def test_cron_schedules_run_at_the_expressions_times_in_their_time_zone(
    cron: str, time_zone: str | None, now: datetime, due: datetime
) -> None:
    entity = Entity()
    entity.now = now
    entity.run("create_schedule", ScheduleCreationOptions("s", "report", cron=cron, time_zone=time_zone).to_json())
    assert wake_ups(entity.wake())[0][1] == due
    entity.now = due
    fired = entity.wake()
    assert starts(fired) == [f"s-{due.isoformat()}"]
    assert wake_ups(fired)[0][1] > due


def test_a_cron_start_time_that_matches_the_expression_is_the_first_run() -> None:
    entity = Entity()
    start = T0 + timedelta(hours=1)
    entity.run("create_schedule", ScheduleCreationOptions("s", "report", cron="0 * * * *", start_at=start).to_json())
    assert wake_ups(entity.wake())[0][1] == start


def test_bad_cron_input_names_the_field() -> None:
    with pytest.raises(ValueError, match="cron 'every day' is not a valid cron expression"):
        ScheduleCreationOptions("s", "report", cron="every day")
    with pytest.raises(ValueError, match="time_zone 'Mars/Olympus' is not a known IANA time zone"):
        ScheduleCreationOptions("s", "report", cron="* * * * *", time_zone="Mars/Olympus")


def test_a_missing_croniter_gets_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "croniter", None)
    with pytest.raises(ImportError, match=r"cron schedules need the 'croniter' package.*dtscale\[cron\]"):
        ScheduleCreationOptions("s", "report", cron="* * * * *")
    ScheduleCreationOptions("s", "report", timedelta(minutes=1))  # interval schedules do not need it


def test_a_worker_clock_behind_a_run_at_the_start_time_does_not_start_it_again() -> None:
    entity = Entity()
    start = T0 + MINUTE * 10
    create(entity, start_at=start)
    entity.wake()
    entity.now = start
    assert starts(entity.wake()) == [f"s-{start.isoformat()}"]
    entity.run("pause_schedule")
    entity.run("resume_schedule")
    entity.now = start - timedelta(seconds=30)  # another worker, its clock behind the start time
    rearmed = entity.wake()
    assert starts(rearmed) == [] and wake_ups(rearmed)[0][1] == start + MINUTE
