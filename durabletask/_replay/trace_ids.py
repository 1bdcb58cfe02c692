"""The trace and span IDs of the orchestration being run, as plain text for log records.

The worker sets them around a turn (it knows the orchestration's span); the replay-safe logger adds them to
each record as ``otelTraceID`` and ``otelSpanID``, the attributes OpenTelemetry's logging integration uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ACTIVE: ContextVar[tuple[str, str] | None] = ContextVar("durabletask_trace_ids", default=None)


def current() -> tuple[str, str] | None:
    return _ACTIVE.get()


@contextmanager
def active(ids: tuple[str, str] | None) -> Iterator[None]:
    token = _ACTIVE.set(ids)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
