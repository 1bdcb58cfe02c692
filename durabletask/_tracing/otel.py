"""The OpenTelemetry side: live spans, spans recorded afterwards with a known ID, and the current context.

Imported only when ``opentelemetry`` is installed (``durabletask._tracing.otel_available``).
"""

from __future__ import annotations

import functools
import logging
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from durabletask._errors import exception_message
from durabletask._trace_context import Parent

TRACER_NAME = "durabletask"
log = logging.getLogger("durabletask.tracing")

KINDS = {
    "internal": trace.SpanKind.INTERNAL,
    "server": trace.SpanKind.SERVER,
    "client": trace.SpanKind.CLIENT,
    "producer": trace.SpanKind.PRODUCER,
    "consumer": trace.SpanKind.CONSUMER,
}


@functools.cache
def _tracer() -> trace.Tracer:
    # The global API hands out a proxy until a provider is set, so one tracer serves for the process's life.
    return trace.get_tracer(TRACER_NAME)


def _span_context(parent: Parent, *, remote: bool) -> trace.SpanContext:
    state = trace.TraceState.from_header([parent.trace_state]) if parent.trace_state else None
    return trace.SpanContext(
        trace_id=parent.trace_id,
        span_id=parent.span_id,
        is_remote=remote,
        trace_flags=trace.TraceFlags(parent.flags),
        trace_state=state,
    )


def current_parent() -> Parent | None:
    """The active span's context, as the parent to send along; ``None`` when no valid span is active."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    state = ctx.trace_state.to_header() if ctx.trace_state else None
    return Parent(ctx.trace_id, ctx.span_id, int(ctx.trace_flags), state or None)


def _context_of(parent: Parent | None) -> otel_context.Context | None:
    if parent is None:
        return None
    return trace.set_span_in_context(trace.NonRecordingSpan(_span_context(parent, remote=True)))


@contextmanager
def activated(parent: Parent | None) -> Iterator[None]:
    """Makes ``parent`` the current context (without a span of ours) for the block."""
    ctx = _context_of(parent)
    if ctx is None:
        yield
        return
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


@contextmanager
def live_span(
    name: str, kind: str, attributes: Mapping[str, str], parent: Parent | None = None, *, use_current: bool = True
) -> Iterator[Any]:
    """A span around the block, child of ``parent`` (or of the current span when ``use_current``)."""
    ctx = _context_of(parent)
    if ctx is None and not use_current:
        ctx = otel_context.Context()
    tracer = _tracer()
    with tracer.start_as_current_span(
        name, context=ctx, kind=KINDS[kind], attributes=dict(attributes), record_exception=False
    ) as span:
        yield span


def record_failure(span: Any, exc: BaseException) -> None:
    message = exception_message(exc)
    span.set_status(trace.Status(trace.StatusCode.ERROR, message))
    try:
        span.record_exception(exc)
    except Exception:  # it reads str(exc), which user code can make raise; the event then carries our line
        span.add_event("exception", {"exception.type": type(exc).__name__, "exception.message": message})


_provider_seen = False  # a real provider was found; OpenTelemetry sets the global provider once per process


def recording() -> bool:
    """Whether spans started now would be recorded: a tracer provider has been set.

    Until one is, the global tracer hands out non-recording spans that only carry their parent's context,
    which :func:`activated` does for far less. Asked per work item; once a provider is found the answer
    stays yes, since OpenTelemetry refuses to replace the global provider.
    """
    global _provider_seen
    if _provider_seen:
        return True
    if isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return False
    _provider_seen = True
    return True


def _sdk_processor() -> tuple[Any, Any] | None:
    """The SDK provider and its span processor, which recorded spans with a known ID are handed to."""
    # A provider can only be the SDK's if the SDK was imported (by whoever made it); looking it up
    # instead of importing it keeps the SDK's import out of every process that never uses it.
    sdk = sys.modules.get("opentelemetry.sdk.trace")
    if sdk is None:
        return None
    TracerProvider = sdk.TracerProvider
    provider = trace.get_tracer_provider()
    processor = getattr(provider, "_active_span_processor", None)
    if not isinstance(provider, TracerProvider) or processor is None:
        return None
    return provider, processor


def can_record_known_ids() -> bool:
    """Whether spans whose ID was sent ahead (orchestrations, their task calls) can be recorded."""
    return _sdk_processor() is not None


def record_span(
    name: str,
    kind: str,
    attributes: Mapping[str, str],
    *,
    context: Parent | None,
    parent: Parent | None,
    start_ns: int | None,
    end_ns: int | None = None,
    error: str | None = None,
) -> None:
    """Records a finished span; with ``context`` its IDs are those (sent ahead to its children)."""
    end = end_ns or time.time_ns()
    start = start_ns or end
    if context is not None and _record_with_id(name, kind, attributes, context, parent, start, end, error):
        return
    tracer = _tracer()
    ctx = _context_of(parent) or otel_context.Context()
    span = tracer.start_span(name, context=ctx, kind=KINDS[kind], attributes=dict(attributes), start_time=start)
    if error is not None:
        span.set_status(trace.Status(trace.StatusCode.ERROR, error))
    span.end(end_time=end)


def _record_with_id(
    name: str,
    kind: str,
    attributes: Mapping[str, str],
    context: Parent,
    parent: Parent | None,
    start: int,
    end: int,
    error: str | None,
) -> bool:
    found = _sdk_processor()
    if found is None:
        return False
    provider, processor = found
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    status = trace.Status(trace.StatusCode.ERROR, error) if error is not None else trace.Status(trace.StatusCode.UNSET)
    try:
        span = ReadableSpan(
            name=name,
            context=_span_context(context, remote=False),
            parent=_span_context(parent, remote=True) if parent is not None else None,
            kind=KINDS[kind],
            attributes=dict(attributes),
            start_time=start,
            end_time=end,
            resource=provider.resource,
            instrumentation_scope=InstrumentationScope(TRACER_NAME),
            status=status,
        )
        processor.on_end(span)
    except Exception:  # the SDK's internals moved: fall back to a span with an ID of its own
        log.debug("could not record span %s with its known ID", name, exc_info=True)
        return False
    return True
