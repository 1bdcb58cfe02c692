"""Schedule options, queries and descriptions, and the schedule entity's persisted configuration and state.

The persisted shapes (``ScheduleConfiguration.to_json``, ``ScheduleState.to_json``) are the ones Microsoft's
SDKs and the scheduler dashboard read: PascalCase keys, the status as the .NET enum's ordinal, times as ISO
text, the interval as .NET ``TimeSpan`` text and the orchestration input as a JSON string. Reads also accept
the snake_case keys older Python workers wrote. The cron fields are ours and are written only when set, so an
interval schedule's state is exactly what Microsoft's worker writes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar

from durabletask.scheduled import _timing
from durabletask.scheduled._wire import aware, first_key, from_iso, parse_timespan, timespan_text, to_iso
from durabletask.scheduled.schedule_status import ScheduleStatus
from durabletask.serialization import DEFAULT_DATA_CONVERTER

__all__ = [
    "MINIMUM_INTERVAL",
    "ScheduleConfiguration",
    "ScheduleCreationOptions",
    "ScheduleDescription",
    "ScheduleQuery",
    "ScheduleState",
    "ScheduleUpdateOptions",
]

MINIMUM_INTERVAL = _timing.MINIMUM_INTERVAL


def _require(value: str | None, field_name: str) -> None:
    if not value:
        raise ValueError(f"{field_name} cannot be empty.")


def _check_timing(
    interval: timedelta | None, cron: str | None, time_zone: str | None, *, required: bool, parse_cron: bool = True
) -> None:
    """One of ``interval`` and ``cron``, valid; ``parse_cron=False`` skips parsing (a stored, checked state)."""
    if interval is not None and cron is not None:
        raise ValueError("interval and cron cannot both be set; a schedule runs on one or the other.")
    if interval is not None:
        _timing.validate_interval(interval)
    elif cron is not None:
        if parse_cron:
            _timing.validate_cron(cron, time_zone)
    elif required:
        raise ValueError("interval is required (or cron, for a cron schedule).")
    if time_zone is not None and cron is None:
        raise ValueError("time_zone applies to cron schedules only; set cron as well.")


def _seconds(value: Any) -> timedelta | None:
    return timedelta(seconds=value) if value is not None else None


def _timing_json(cron: str | None, time_zone: str | None) -> dict[str, Any]:
    # Our additions travel only when used, so payloads of interval schedules stay as Microsoft's.
    extra: dict[str, Any] = {}
    if cron is not None:
        extra["cron"] = cron
    if time_zone is not None:
        extra["time_zone"] = time_zone
    return extra


@dataclass
class ScheduleCreationOptions:
    """What a new schedule runs and when.

    Attributes:
        schedule_id: The schedule's ID (the key of its entity).
        orchestration_name: The orchestration started on each run.
        interval: Time between runs (at least one second), counted from ``start_at`` (or the creation time).
        orchestration_input: Input of every run.
        orchestration_instance_id: A fixed instance ID for every run; by default each run gets
            ``"<schedule_id>-<due time in ISO format>"``.
        start_at: No run before this time; runs are aligned to it.
        end_at: No run after this time; the schedule deletes itself once it has passed.
        start_immediately_if_late: When the start time has already passed at creation, run once right away
            instead of waiting for the next aligned time.
        cron: Instead of ``interval``, a cron expression (5 fields, or 6 with seconds; needs ``croniter``).
        time_zone: The IANA time zone the cron expression is read in (UTC by default).
    """

    schedule_id: str
    orchestration_name: str
    interval: timedelta | None = None
    orchestration_input: Any | None = None
    orchestration_instance_id: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    start_immediately_if_late: bool = False
    cron: str | None = field(default=None, kw_only=True)
    time_zone: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        _require(self.schedule_id, "schedule_id")
        _require(self.orchestration_name, "orchestration_name")
        _check_timing(self.interval, self.cron, self.time_zone, required=True)

    def to_json(self) -> dict[str, Any]:
        """These options as a JSON-ready dict (times in ISO 8601, the interval in seconds), as the client sends them to
        the schedule entity.
        """
        return {
            "schedule_id": self.schedule_id,
            "orchestration_name": self.orchestration_name,
            "interval_seconds": self.interval.total_seconds() if self.interval is not None else None,
            "orchestration_input": self.orchestration_input,
            "orchestration_instance_id": self.orchestration_instance_id,
            "start_at": to_iso(self.start_at),
            "end_at": to_iso(self.end_at),
            "start_immediately_if_late": self.start_immediately_if_late,
            **_timing_json(self.cron, self.time_zone),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScheduleCreationOptions:
        """Reads what :meth:`to_json` wrote.

        Args:
            data: A dict :meth:`to_json` wrote (or Microsoft's SDK sent).

        Raises:
            KeyError: ``schedule_id`` or ``orchestration_name`` is missing.
        """
        return cls(
            schedule_id=data["schedule_id"],
            orchestration_name=data["orchestration_name"],
            interval=_seconds(data.get("interval_seconds")),
            orchestration_input=data.get("orchestration_input"),
            orchestration_instance_id=data.get("orchestration_instance_id"),
            start_at=from_iso(data.get("start_at")),
            end_at=from_iso(data.get("end_at")),
            start_immediately_if_late=bool(data.get("start_immediately_if_late", False)),
            cron=data.get("cron"),
            time_zone=data.get("time_zone"),
        )


@dataclass
class ScheduleUpdateOptions:
    """Changes to a schedule: only the fields that are set are applied.

    Setting ``cron`` turns an interval schedule into a cron schedule and setting ``interval`` turns a cron
    schedule back into an interval one.
    """

    orchestration_name: str | None = None
    orchestration_input: Any | None = None
    orchestration_instance_id: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    interval: timedelta | None = None
    start_immediately_if_late: bool | None = None
    cron: str | None = field(default=None, kw_only=True)
    time_zone: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.interval is not None and self.cron is not None:
            raise ValueError("interval and cron cannot both be set; a schedule runs on one or the other.")
        if self.interval is not None:
            _timing.validate_interval(self.interval)
        if self.cron is not None:
            _timing.validate_cron(self.cron, self.time_zone)

    def to_json(self) -> dict[str, Any]:
        """These options as a JSON-ready dict; a field left ``None`` is kept unchanged by the update."""
        return {
            "orchestration_name": self.orchestration_name,
            "orchestration_input": self.orchestration_input,
            "orchestration_instance_id": self.orchestration_instance_id,
            "start_at": to_iso(self.start_at),
            "end_at": to_iso(self.end_at),
            "interval_seconds": self.interval.total_seconds() if self.interval is not None else None,
            "start_immediately_if_late": self.start_immediately_if_late,
            **_timing_json(self.cron, self.time_zone),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScheduleUpdateOptions:
        """Reads what :meth:`to_json` wrote.

        Args:
            data: A dict :meth:`to_json` wrote; absent keys leave their fields unset.
        """
        return cls(
            orchestration_name=data.get("orchestration_name"),
            orchestration_input=data.get("orchestration_input"),
            orchestration_instance_id=data.get("orchestration_instance_id"),
            start_at=from_iso(data.get("start_at")),
            end_at=from_iso(data.get("end_at")),
            interval=_seconds(data.get("interval_seconds")),
            start_immediately_if_late=data.get("start_immediately_if_late"),
            cron=data.get("cron"),
            time_zone=data.get("time_zone"),
        )


@dataclass
class ScheduleQuery:
    """Filters for listing schedules. Bounds on the creation time are exclusive; naive times are UTC."""

    DEFAULT_PAGE_SIZE: ClassVar[int] = 100

    status: ScheduleStatus | None = None
    schedule_id_prefix: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    page_size: int | None = None

    def __post_init__(self) -> None:
        self.created_from = aware(self.created_from)
        self.created_to = aware(self.created_to)
        if self.page_size is not None and self.page_size < 0:
            raise ValueError(f"page_size must be positive (got {self.page_size}).")


@dataclass
class ScheduleDescription:
    """A snapshot of one schedule: its configuration and where it is in its runs."""

    schedule_id: str
    orchestration_name: str | None = None
    orchestration_input: Any | None = None
    orchestration_instance_id: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    interval: timedelta | None = None
    start_immediately_if_late: bool | None = None
    status: ScheduleStatus = ScheduleStatus.UNINITIALIZED
    execution_token: str = ""
    last_run_at: datetime | None = None
    next_run_at: datetime | None = None
    cron: str | None = field(default=None, kw_only=True)
    time_zone: str | None = field(default=None, kw_only=True)
    created_at: datetime | None = field(default=None, kw_only=True)
    last_modified_at: datetime | None = field(default=None, kw_only=True)


def _encode_input(value: Any) -> str | None:
    # Stored as JSON text, as the .NET SDK stores it, so the dashboard reads the entity state as is.
    return DEFAULT_DATA_CONVERTER.serialize(value) if value is not None else None


def _decode_input(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return DEFAULT_DATA_CONVERTER.deserialize(value)
    except (ValueError, TypeError):
        return value  # not JSON after all: keep the text rather than fail to load the schedule


def _interval_of(data: dict[str, Any]) -> timedelta | None:
    text = first_key(data, "Interval", "interval")
    if isinstance(text, str):
        return parse_timespan(text)
    return _seconds(data.get("interval_seconds"))


class ScheduleConfiguration:
    """What a schedule runs and when; part of the schedule entity's state."""

    def __init__(
        self,
        schedule_id: str,
        orchestration_name: str,
        interval: timedelta | None,
        *,
        cron: str | None = None,
        time_zone: str | None = None,
    ) -> None:
        _require(schedule_id, "schedule_id")
        _require(orchestration_name, "orchestration_name")
        # Cron text was parsed when the options were made; reading a stored state must not need croniter.
        _check_timing(interval, cron, time_zone, required=True, parse_cron=False)
        self.schedule_id = schedule_id
        self.orchestration_name = orchestration_name
        self.interval = interval
        self.cron = cron
        self.time_zone = time_zone
        self.orchestration_input: Any | None = None
        self.orchestration_instance_id: str | None = None
        self.start_at: datetime | None = None
        self.end_at: datetime | None = None
        self.start_immediately_if_late = False

    @staticmethod
    def from_create_options(options: ScheduleCreationOptions) -> ScheduleConfiguration:
        """The configuration a new schedule starts with, taken from the options it is created with.

        Args:
            options: The creation options.
        """
        config = ScheduleConfiguration(
            options.schedule_id,
            options.orchestration_name,
            options.interval,
            cron=options.cron,
            time_zone=options.time_zone,
        )
        config.orchestration_input = options.orchestration_input
        config.orchestration_instance_id = options.orchestration_instance_id
        config.start_at = options.start_at
        config.end_at = options.end_at
        config.start_immediately_if_late = options.start_immediately_if_late
        config._validate()
        return config

    def update(self, options: ScheduleUpdateOptions) -> set[str]:
        """Apply the fields ``options`` sets; returns the names of the fields that changed.

        Args:
            options: The fields to change; an unset (``None``) field keeps its value.
        """
        changed: set[str] = set()

        def put(name: str, value: Any, *, when: bool) -> None:
            if when and value != getattr(self, name):
                setattr(self, name, value)
                changed.add(name)

        put("orchestration_name", options.orchestration_name, when=bool(options.orchestration_name))
        put("orchestration_input", options.orchestration_input, when=options.orchestration_input is not None)
        put(
            "orchestration_instance_id",
            options.orchestration_instance_id,
            when=bool(options.orchestration_instance_id),
        )
        put("start_at", options.start_at, when=options.start_at is not None)
        put("end_at", options.end_at, when=options.end_at is not None)
        late = options.start_immediately_if_late
        put("start_immediately_if_late", late, when=late is not None)
        if options.interval is not None:
            put("interval", _timing.validate_interval(options.interval), when=True)
            put("cron", None, when=True)
            put("time_zone", None, when=True)
        if options.cron is not None:
            put("cron", options.cron, when=True)
            put("interval", None, when=True)
        if options.time_zone is not None:
            put("time_zone", options.time_zone, when=True)
        _check_timing(self.interval, self.cron, self.time_zone, required=True, parse_cron=False)
        self._validate()
        return changed

    def _validate(self) -> None:
        start, end = aware(self.start_at), aware(self.end_at)
        if start is not None and end is not None and start > end:
            raise ValueError(f"start_at cannot be later than end_at (start_at {start}, end_at {end}).")

    def to_json(self) -> dict[str, Any]:
        """The configuration as the schedule entity stores it, with the keys of Microsoft's SDK (``ScheduleId``,
        ``Interval`` as a .NET TimeSpan, ...), so either SDK's worker reads a schedule made by the other.

        A cron schedule also stores its period as ``Interval``, for readers that do not know cron.
        """
        interval = self.interval
        if self.cron is not None:
            interval = _timing.cron_period(self.cron, self.time_zone)
        data: dict[str, Any] = {
            "ScheduleId": self.schedule_id,
            "OrchestrationName": self.orchestration_name,
            "Interval": timespan_text(interval),
            "OrchestrationInput": _encode_input(self.orchestration_input),
            "OrchestrationInstanceId": self.orchestration_instance_id,
            "StartAt": to_iso(self.start_at),
            "EndAt": to_iso(self.end_at),
            "StartImmediatelyIfLate": self.start_immediately_if_late,
        }
        if self.cron is not None:
            data["CronExpression"] = self.cron
            data["TimeZone"] = self.time_zone
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScheduleConfiguration:
        """Reads a stored configuration, with Microsoft's keys or our snake_case ones.

        Args:
            data: The stored dict.
        """
        cron = first_key(data, "CronExpression", "cron")
        config = cls(
            first_key(data, "ScheduleId", "schedule_id"),
            first_key(data, "OrchestrationName", "orchestration_name"),
            # A cron schedule's stored interval is only its period, for readers without cron support.
            None if cron is not None else _interval_of(data),
            cron=cron,
            time_zone=first_key(data, "TimeZone", "time_zone"),
        )
        if "OrchestrationInput" in data:
            config.orchestration_input = _decode_input(data["OrchestrationInput"])
        else:
            config.orchestration_input = data.get("orchestration_input")
        config.orchestration_instance_id = first_key(data, "OrchestrationInstanceId", "orchestration_instance_id")
        config.start_at = from_iso(first_key(data, "StartAt", "start_at"))
        config.end_at = from_iso(first_key(data, "EndAt", "end_at"))
        late = first_key(data, "StartImmediatelyIfLate", "start_immediately_if_late", default=False)
        config.start_immediately_if_late = bool(late)
        return config


def _new_token() -> str:
    return uuid.uuid4().hex


class ScheduleState:
    """The schedule entity's whole state: status, configuration, and the bookkeeping of its runs.

    ``execution_token`` ties the entity's self-addressed ``run_schedule`` signals to the current
    configuration: pausing, updating or re-creating the schedule replaces the token, and a signal carrying
    an older token is ignored, so at most one chain of runs is ever live.
    """

    def __init__(self) -> None:
        self.status = ScheduleStatus.UNINITIALIZED
        self.execution_token = _new_token()
        self.last_run_at: datetime | None = None
        self.next_run_at: datetime | None = None
        self.schedule_created_at: datetime | None = None
        self.schedule_last_modified_at: datetime | None = None
        self.schedule_configuration: ScheduleConfiguration | None = None

    def refresh_execution_token(self) -> None:
        """Replaces the execution token, so wake-ups armed before (carrying the old token) are ignored as stale."""
        self.execution_token = _new_token()

    def to_json(self) -> dict[str, Any]:
        """The state as the schedule entity stores it, with the keys and status numbers of Microsoft's SDK."""
        config = self.schedule_configuration
        return {
            "Status": self.status.to_dotnet_ordinal(),
            "ExecutionToken": self.execution_token,
            "LastRunAt": to_iso(self.last_run_at),
            "NextRunAt": to_iso(self.next_run_at),
            "ScheduleCreatedAt": to_iso(self.schedule_created_at),
            "ScheduleLastModifiedAt": to_iso(self.schedule_last_modified_at),
            "ScheduleConfiguration": config.to_json() if config is not None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScheduleState:
        """Reads a stored state, with Microsoft's keys or our snake_case ones; a state without a token gets a fresh
        one.

        Args:
            data: A stored state (``Status``, ``ExecutionToken``, ``ScheduleConfiguration``, ... or their snake_case
                forms).
        """
        state = cls()
        state.status = ScheduleStatus.from_dotnet(first_key(data, "Status", "status"))
        token = first_key(data, "ExecutionToken", "execution_token")
        if token is not None:  # a state without a token keeps a fresh one: None would make every signal stale
            state.execution_token = token
        state.last_run_at = from_iso(first_key(data, "LastRunAt", "last_run_at"))
        state.next_run_at = from_iso(first_key(data, "NextRunAt", "next_run_at"))
        state.schedule_created_at = from_iso(first_key(data, "ScheduleCreatedAt", "schedule_created_at"))
        modified = first_key(data, "ScheduleLastModifiedAt", "schedule_last_modified_at")
        state.schedule_last_modified_at = from_iso(modified)
        config = first_key(data, "ScheduleConfiguration", "schedule_configuration")
        if isinstance(config, dict):
            state.schedule_configuration = ScheduleConfiguration.from_json(config)
        elif isinstance(config, ScheduleConfiguration):
            state.schedule_configuration = config
        return state

    def to_description(self) -> ScheduleDescription:
        """What a client sees of this schedule: a :class:`ScheduleDescription` of its configuration and state."""
        config = self.schedule_configuration
        return ScheduleDescription(
            schedule_id=config.schedule_id if config else "",
            orchestration_name=config.orchestration_name if config else None,
            orchestration_input=config.orchestration_input if config else None,
            orchestration_instance_id=config.orchestration_instance_id if config else None,
            start_at=config.start_at if config else None,
            end_at=config.end_at if config else None,
            interval=config.interval if config else None,
            start_immediately_if_late=config.start_immediately_if_late if config else None,
            status=self.status,
            execution_token=self.execution_token,
            last_run_at=self.last_run_at,
            next_run_at=self.next_run_at,
            cron=config.cron if config else None,
            time_zone=config.time_zone if config else None,
            created_at=self.schedule_created_at,
            last_modified_at=self.schedule_last_modified_at,
        )
