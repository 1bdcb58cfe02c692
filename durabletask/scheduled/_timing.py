"""When a schedule runs next: fixed intervals aligned to the start time, or cron expressions in a time zone."""

from __future__ import annotations

import importlib
from datetime import datetime, timedelta, timezone
from typing import Any

MINIMUM_INTERVAL = timedelta(seconds=1)

_CRON_MISSING = (
    "cron schedules need the 'croniter' package, which is not installed; install it with "
    "pip install 'dtscale[cron]' (or pip install croniter)"
)


def validate_interval(interval: timedelta, field: str = "interval") -> timedelta:
    """``interval`` if it is a usable period (at least one second).

    Raises:
        ValueError: ``interval`` is zero, negative or shorter than a second; the message names ``field``.
    """
    if not isinstance(interval, timedelta):
        raise ValueError(f"{field} must be a datetime.timedelta, not {type(interval).__name__}")
    if interval <= timedelta(0):
        raise ValueError(f"{field} must be positive (got {interval}).")
    if interval < MINIMUM_INTERVAL:
        raise ValueError(f"{field} must be at least 1 second (got {interval}).")
    return interval


def _croniter() -> Any:
    # croniter is an optional extra: interval schedules must work without it.
    try:
        return importlib.import_module("croniter").croniter
    except ImportError as error:
        raise ImportError(_CRON_MISSING) from error


def _zone(time_zone: str | None, field: str = "time_zone") -> Any:
    if not time_zone:
        return timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"{field} '{time_zone}' is not a known IANA time zone") from error


def validate_cron(expression: str, time_zone: str | None, field: str = "cron") -> None:
    """Check a cron expression (5 fields, or 6 with seconds) and its time zone.

    Raises:
        ValueError: the expression or the time zone is not valid; the message names the field.
        ImportError: croniter is not installed.
    """
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError(f"{field} must be a non-empty cron expression")
    croniter = _croniter()
    _zone(time_zone)
    if not croniter.is_valid(expression):
        raise ValueError(f"{field} '{expression}' is not a valid cron expression")


def next_cron_time(expression: str, time_zone: str | None, after: datetime, *, inclusive: bool = False) -> datetime:
    """The first time after ``after`` (or at it, when ``inclusive``) that ``expression`` names, in UTC.

    The expression is read in ``time_zone`` (UTC when empty), so ``0 2 * * *`` in ``Europe/Paris`` is 02:00
    Paris time whatever the offset of the day.
    """
    croniter = _croniter()
    local = after.astimezone(_zone(time_zone))
    if inclusive:
        # croniter returns times strictly after its base; step back below the base's resolution.
        local -= timedelta(microseconds=1)
    found: datetime = croniter(expression, local).get_next(datetime)
    return found.astimezone(timezone.utc)


def next_interval_time(start: datetime, interval: timedelta, now: datetime) -> datetime:
    """The first time ``start + k * interval`` (k >= 1) after ``now``, for a ``now`` at or after ``start``."""
    elapsed = (now - start) // interval
    return start + interval * (elapsed + 1)


# A fixed reference, so the period stored for a cron schedule is the same whenever and wherever it is written.
_PERIOD_REFERENCE = datetime(2000, 1, 3, tzinfo=timezone.utc)  # a Monday


def cron_period(expression: str, time_zone: str | None) -> timedelta | None:
    """The gap between the expression's first two times after a fixed date, or ``None`` without croniter.

    Stored as the ``Interval`` of a cron schedule so that SDKs without cron support (Microsoft's) read the
    schedule as an interval schedule of about the same period instead of failing to read it.
    """
    try:
        first = next_cron_time(expression, time_zone, _PERIOD_REFERENCE)
    except ImportError:
        return None
    return next_cron_time(expression, time_zone, first) - first
