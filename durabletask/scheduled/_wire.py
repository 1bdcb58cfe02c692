"""How schedule fields are stored: ISO-8601 times and .NET ``TimeSpan`` text for intervals.

The entity state is shared with Microsoft's SDKs and the scheduler dashboard, which read it with .NET's
``System.Text.Json``: times are ISO strings with an offset and an interval is ``[-][d.]hh:mm:ss[.fffffff]``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

_TIMESPAN = re.compile(r"^(?P<sign>-)?(?:(?P<days>\d+)\.)?(?P<h>\d+):(?P<m>\d+):(?P<s>\d+)(?:\.(?P<frac>\d{1,7}))?$")


def aware(value: datetime | None) -> datetime | None:
    """``value`` with a time zone; a naive time is taken as UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=timezone.utc)


def to_iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def from_iso(value: Any) -> datetime | None:
    """A time from its ISO text (a trailing ``Z`` is accepted); empty or missing → ``None``."""
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    text = str(value)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text)


def timespan_text(value: timedelta | None) -> str | None:
    """``value`` as .NET ``TimeSpan`` text, e.g. ``1.02:03:04.5000000``; ``None`` stays ``None``."""
    if value is None:
        return None
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    minutes, seconds = divmod(value.seconds, 60)
    hours, minutes = divmod(minutes, 60)
    text = f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    if value.days:
        text = f"{value.days}.{text}"
    if value.microseconds:
        text += f".{value.microseconds * 10:07d}"  # .NET counts 100 ns ticks
    return sign + text


def parse_timespan(text: str) -> timedelta:
    """The interval of .NET ``TimeSpan`` text.

    Raises:
        ValueError: ``text`` is not of the form ``[-][d.]hh:mm:ss[.fffffff]``.
    """
    match = _TIMESPAN.match(text.strip())
    if match is None:
        raise ValueError(f"interval '{text}' is not a .NET TimeSpan ([-][d.]hh:mm:ss[.fffffff])")
    ticks = int((match["frac"] or "0").ljust(7, "0"))
    value = timedelta(
        days=int(match["days"] or 0),
        hours=int(match["h"]),
        minutes=int(match["m"]),
        seconds=int(match["s"]),
        microseconds=ticks / 10,
    )
    return -value if match["sign"] else value


def first_key(data: dict[str, Any], *keys: str, default: Any = None) -> Any:
    """The value of the first of ``keys`` present in ``data``.

    States are read under the .NET-style PascalCase names first, then the snake_case names older Python
    workers wrote, so either SDK's state loads.
    """
    for key in keys:
        if key in data:
            return data[key]
    return default
