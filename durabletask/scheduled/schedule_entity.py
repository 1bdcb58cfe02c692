"""The schedule entity: one per schedule, holding its state and starting each run when it is due.

The entity wakes itself with a delayed ``run_schedule`` signal carrying the current execution token. A run
is started from the same entity operation that records it (``last_run_at``) and arms the next wake-up: the
backend commits the new state, the start of the run and the next signal together, or none of them. A batch
that is lost (the worker dies, its lease expires) is run again from the same state, so it computes the same
due time and the same run instance ID, and the backend never starts an instance ID twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from durabletask.entities import DurableEntity, EntityInstanceId
from durabletask.scheduled import _timing, transitions
from durabletask.scheduled._wire import aware
from durabletask.scheduled.exceptions import ScheduleInvalidTransitionError
from durabletask.scheduled.models import (
    ScheduleConfiguration,
    ScheduleCreationOptions,
    ScheduleState,
    ScheduleUpdateOptions,
)
from durabletask.scheduled.schedule_status import ScheduleStatus

__all__ = ["DELETE_OPERATION", "ENTITY_NAME", "RUN_SCHEDULE_OPERATION", "Schedule", "run_instance_id"]

ENTITY_NAME = "schedule"
DELETE_OPERATION = "delete"
RUN_SCHEDULE_OPERATION = "run_schedule"

logger = logging.getLogger("durabletask.scheduled")

# Changes to these fields move the next run, so the stored one is dropped and computed again.
_TIMING_FIELDS = frozenset({"start_at", "interval", "start_immediately_if_late", "cron", "time_zone"})


def _utc_now() -> datetime:
    """The current UTC time from the system clock: the schedule entity's default clock."""
    return datetime.now(timezone.utc)


def run_instance_id(config: ScheduleConfiguration, due: datetime) -> str:
    """The instance ID of the run due at ``due``: the configured one, else ``<schedule_id>-<due in ISO>``.

    Derived from the schedule and the due time only, so every attempt at one run names the same instance.

    Args:
        config: The schedule's configuration.
        due: The run's due time.
    """
    return config.orchestration_instance_id or f"{config.schedule_id}-{due.isoformat()}"


def _schedule_id(state: ScheduleState) -> str:
    return state.schedule_configuration.schedule_id if state.schedule_configuration is not None else ""


def _options(value: Any, kind: type[Any]) -> Any:
    # Inputs arrive as the JSON objects either SDK's client sends; a converter may already have rebuilt them.
    if isinstance(value, kind):
        return value
    if isinstance(value, dict):
        return kind.from_json(value)
    raise ValueError(f"the input of this operation must be a {kind.__name__} object, not {type(value).__name__}")


class Schedule(DurableEntity):
    """The entity behind one schedule (registered as ``schedule`` by ``configure_scheduled_tasks``)."""

    #: Where the entity reads the time; ``configure_scheduled_tasks(clock=...)`` registers a subclass with another.
    clock: Callable[[], datetime] = staticmethod(_utc_now)

    def _now(self) -> datetime:
        now = aware(type(self).clock())
        assert now is not None
        return now

    def _load(self) -> ScheduleState:
        raw = self.get_state(None)
        return ScheduleState.from_json(raw) if isinstance(raw, dict) else ScheduleState()

    def _save(self, state: ScheduleState) -> None:
        self.set_state(state.to_json())

    def _wake(self, state: ScheduleState, at: datetime | None = None) -> None:
        assert state.schedule_configuration is not None
        target = EntityInstanceId(ENTITY_NAME, state.schedule_configuration.schedule_id)
        self.signal_entity(target, RUN_SCHEDULE_OPERATION, state.execution_token, signal_time=at)

    def _refuse(self, state: ScheduleState, operation: str, target: ScheduleStatus, schedule_id: str = "") -> None:
        if not transitions.is_valid_transition(operation, state.status, target):
            raise ScheduleInvalidTransitionError(schedule_id or _schedule_id(state), state.status, target, operation)

    def create_schedule(self, options: Any) -> None:
        """Create the schedule, or replace the configuration of an existing one (which becomes active).

        Args:
            options: A :class:`ScheduleCreationOptions`, or the JSON object either SDK's client sends.

        Raises:
            ValueError: ``options`` is neither, or the configuration is invalid.
        """
        created = _options(options, ScheduleCreationOptions)
        state = self._load()
        self._refuse(state, transitions.CREATE_SCHEDULE, ScheduleStatus.ACTIVE, created.schedule_id)
        now = self._now()
        state.schedule_configuration = ScheduleConfiguration.from_create_options(created)
        if state.schedule_created_at is None:
            state.schedule_created_at = now
        else:
            state.refresh_execution_token()
            state.next_run_at = None
        state.status = ScheduleStatus.ACTIVE
        state.schedule_last_modified_at = now
        logger.info("Created schedule '%s'.", created.schedule_id)
        self._save(state)
        self._wake(state)

    def update_schedule(self, options: Any) -> None:
        """Change the fields the options set; the status stays as it is.

        Args:
            options: A :class:`ScheduleUpdateOptions`, or its JSON object.

        Raises:
            ValueError: ``options`` is neither, or the schedule has no configuration.
            ScheduleInvalidTransitionError: The schedule does not exist.
        """
        update = _options(options, ScheduleUpdateOptions)
        state = self._load()
        self._refuse(state, transitions.UPDATE_SCHEDULE, state.status)
        config = state.schedule_configuration
        if config is None:
            raise ValueError("Schedule configuration is missing.")
        changed = config.update(update)
        if not changed:
            self._save(state)
            return
        state.schedule_last_modified_at = self._now()
        if changed & _TIMING_FIELDS:
            state.next_run_at = None
        state.refresh_execution_token()
        logger.info("Updated schedule '%s' (%s).", config.schedule_id, ", ".join(sorted(changed)))
        self._save(state)
        if state.status == ScheduleStatus.ACTIVE:
            self._wake(state)

    def pause_schedule(self, _: Any = None) -> None:
        """Stop starting runs until resumed; the pending wake-up becomes stale.

        Args:
            _: Ignored (the operation takes no input; a client may send ``None``).

        Raises:
            ScheduleInvalidTransitionError: The schedule is not active.
        """
        state = self._load()
        self._refuse(state, transitions.PAUSE_SCHEDULE, ScheduleStatus.PAUSED)
        state.status = ScheduleStatus.PAUSED
        state.next_run_at = None
        state.refresh_execution_token()
        logger.info("Paused schedule '%s'.", _schedule_id(state))
        self._save(state)

    def resume_schedule(self, _: Any = None) -> None:
        """Start running again from the next due time after now (runs due while paused are skipped).

        Args:
            _: Ignored (the operation takes no input; a client may send ``None``).

        Raises:
            ScheduleInvalidTransitionError: The schedule is not paused.
        """
        state = self._load()
        self._refuse(state, transitions.RESUME_SCHEDULE, ScheduleStatus.ACTIVE)
        state.status = ScheduleStatus.ACTIVE
        state.next_run_at = None
        logger.info("Resumed schedule '%s'.", _schedule_id(state))
        self._save(state)
        self._wake(state)

    def run_schedule(self, execution_token: Any) -> None:
        """The wake-up: start the run that is due, if any, and arm the next wake-up.

        Args:
            execution_token: The token the wake-up was armed with; a stale one (from before a pause or an update)
                is ignored.

        Raises:
            ValueError: The schedule has no configuration or is not active.
        """
        state = self._load()
        if state.status == ScheduleStatus.UNINITIALIZED:
            self.set_state(None)  # deleted meanwhile: the wake-up must not bring the entity back
            return
        config = state.schedule_configuration
        if config is None:
            raise ValueError("Schedule configuration is missing.")
        if execution_token != state.execution_token:
            logger.debug("Ignoring a stale wake-up of schedule '%s'.", config.schedule_id)
            return
        if state.status != ScheduleStatus.ACTIVE:
            raise ValueError("Schedule must be in Active status to run.")
        now = self._now()
        end_at = aware(config.end_at)
        if end_at is not None and now > end_at:
            logger.info("Schedule '%s' is past its end time; deleting it.", config.schedule_id)
            state.next_run_at = None
            self._save(state)
            self.signal_entity(EntityInstanceId(ENTITY_NAME, config.schedule_id), DELETE_OPERATION)
            return
        due = self._next_run(state, config, now)
        if due <= now:
            instance_id = run_instance_id(config, due)
            logger.info(
                "Schedule '%s' starts '%s' as '%s'.", config.schedule_id, config.orchestration_name, instance_id
            )
            self.schedule_new_orchestration(config.orchestration_name, config.orchestration_input, instance_id)
            state.last_run_at = due
            state.next_run_at = None
            due = self._next_run(state, config, now)
        state.next_run_at = due
        self._save(state)
        self._wake(state, due)

    def _next_run(self, state: ScheduleState, config: ScheduleConfiguration, now: datetime) -> datetime:
        stored = aware(state.next_run_at)
        if stored is not None:
            return stored
        start = aware(config.start_at) or aware(state.schedule_created_at) or now
        # Counting from the last run when it is later than now keeps a worker whose clock is behind the one that
        # started that run from arming its due time again.
        last = aware(state.last_run_at)
        after = max(now, last) if last is not None else now
        if after < start:
            if config.cron is not None:
                return _timing.next_cron_time(config.cron, config.time_zone, start, inclusive=True)
            return start
        if last is None and config.start_immediately_if_late:
            return now
        if config.cron is not None:
            return _timing.next_cron_time(config.cron, config.time_zone, after)
        assert config.interval is not None
        return _timing.next_interval_time(start, config.interval, after)
