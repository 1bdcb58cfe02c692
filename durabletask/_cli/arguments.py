"""Reading command-line values every command shares: JSON and ISO 8601 times, and the error for bad ones."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from durabletask._errors import DurableTaskError


class UsageError(DurableTaskError, ValueError):
    """A command line argument that parsed but makes no sense (bad JSON, bad time, conflicting options)."""


def parse_json(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc.msg} at position {exc.pos}") from exc


def parse_time(text: str | None, what: str) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"{what} must be an ISO 8601 time such as 2026-01-31T12:00:00Z, got {text!r}") from exc
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
