"""Timestamp helpers shared by the history-export modules (not part of the public surface)."""

from __future__ import annotations

from datetime import datetime, timezone


def dt_to_iso(value: datetime | None) -> str | None:
    """``value`` in UTC as ISO 8601, or ``None``; a naive datetime is taken to be UTC already."""
    if value is None:
        return None
    value = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    return value.isoformat()


def dt_from_iso(value: str | None) -> datetime | None:
    """Parses ISO 8601 text (``None`` passes through); text without an offset is read as UTC."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


__all__ = ["dt_from_iso", "dt_to_iso"]
