"""An in-memory OpenTelemetry exporter for the tracing tests, and the span tree they compare."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_exporter: InMemorySpanExporter | None = None


def exporter() -> InMemorySpanExporter:
    """The process's exporter (OpenTelemetry takes one global provider per process, so it is set once)."""
    global _exporter
    if _exporter is None:
        _exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            raise RuntimeError("another tracer provider was installed first")
    return _exporter


def of_trace(spans: Iterable[ReadableSpan], trace_id: int) -> list[ReadableSpan]:
    return [s for s in spans if s.context is not None and s.context.trace_id == trace_id]


def _label(span: ReadableSpan, replace: dict[str, str]) -> str:
    kind = span.kind.name.lower()
    attrs: dict[str, Any] = {}
    for key, value in sorted((span.attributes or {}).items()):
        text = str(value)
        if key == "durabletask.fire_at":
            datetime.fromisoformat(text)  # a time, whose value the test does not know
            text = "<time>"
        for real, placeholder in replace.items():
            text = text.replace(real, placeholder)
        attrs[key.removeprefix("durabletask.")] = text
    status = span.status.status_code.name
    description = span.status.description or ""
    for real, placeholder in replace.items():
        description = description.replace(real, placeholder)
    extra = f" ERROR({description})" if status == "ERROR" else ""
    return f"{span.name} [{kind}]{extra} {attrs}"


def tree(spans: Sequence[ReadableSpan], replace: dict[str, str] | None = None) -> list[Any]:
    """Spans as nested ``[label, [children...]]``, children ordered by start time then label.

    A span whose parent is not among ``spans`` is a root; a trace that is one connected tree has one root.
    """
    replace = replace or {}
    ids = {s.context.span_id for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)

    def build(parent: int | None) -> list[Any]:
        found = sorted(children.get(parent, []), key=lambda s: (s.start_time or 0, _label(s, replace)))
        return [[_label(s, replace), build(s.context.span_id if s.context else None)] for s in found]

    return build(None)


def render(nodes: list[Any], depth: int = 0) -> str:
    """The tree as indented text (for messages and the sample's console output)."""
    lines = []
    for label, kids in nodes:
        lines.append("  " * depth + label)
        if kids:
            lines.append(render(kids, depth + 1))
    return "\n".join(lines)
