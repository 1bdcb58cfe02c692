"""Distributed tracing: W3C trace context through the protocol, and OpenTelemetry spans when it is installed.

Span names, kinds and attributes are those of Microsoft's SDK, so traces read alike whichever SDK ran a
step. OpenTelemetry is optional: without ``opentelemetry-api`` every hook here is a cheap no-op, and
``durabletask._tracing.otel`` (the only module importing it) is never loaded.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from durabletask._trace_context import Parent

ATTR_TYPE = "durabletask.type"
ATTR_NAME = "durabletask.task.name"
ATTR_VERSION = "durabletask.task.version"
ATTR_INSTANCE_ID = "durabletask.task.instance_id"
ATTR_STATUS = "durabletask.task.status"
ATTR_TASK_ID = "durabletask.task.task_id"
ATTR_TARGET_INSTANCE_ID = "durabletask.event.target_instance_id"
ATTR_FIRE_AT = "durabletask.fire_at"
ATTR_ENTITY_OPERATION = "durabletask.entity.operation"


def span_name(kind: str, name: str, version: str | None = None) -> str:
    """``kind:name``, with ``@(version)`` when there is one."""
    return f"{kind}:{name}@({version})" if version else f"{kind}:{name}"


@functools.cache
def otel_available() -> bool:
    """Whether ``opentelemetry-api`` is installed (checked once, without importing it)."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except ModuleNotFoundError:
        return False


def recording(emit: bool) -> bool:
    """Whether spans made now would be recorded: ``emit`` is on and OpenTelemetry has a tracer provider set.

    Checked per work item, so a provider set after the worker started is used from then on.
    """
    return emit and otel_available() and bool(api().recording())


@functools.cache  # an import statement per call showed in the per-work-item profile
def api() -> ModuleType:
    """The OpenTelemetry side (imported on first use; call only when :func:`otel_available`)."""
    from durabletask._tracing import otel as module

    return module


@contextmanager
def producer_span(name: str, attributes: Mapping[str, str], *, emit: bool) -> Iterator[Parent | None]:
    """A PRODUCER span around a client call; yields the context to send with the request.

    With ``emit`` false no span is made and the ambient context (if any) is sent on.
    """
    if not otel_available():
        yield None
        return
    spans = api()
    if not emit:
        yield spans.current_parent()
        return
    with spans.live_span(name, "producer", attributes):
        yield spans.current_parent()


@contextmanager
def server_span(name: str, attributes: Mapping[str, str], parent: Parent | None, *, emit: bool) -> Iterator[Any]:
    """A SERVER span for work a worker runs (activity, entity operation); yields it (or ``None``).

    With ``emit`` false the received context is only made current, for spans the user's code makes.
    """
    if not otel_available():
        yield None
        return
    spans = api()
    if not emit or not spans.recording():
        # Without a provider a span would be a non-recording one carrying ``parent``'s context: the same.
        with spans.activated(parent):
            yield None
        return
    with spans.live_span(name, "server", attributes, parent) as span:
        yield span


def record_failure(span: Any, exc: BaseException) -> None:
    if span is not None:
        api().record_failure(span, exc)
