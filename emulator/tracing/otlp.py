"""Records the emulator's work-item spans with the OpenTelemetry SDK and exports them over OTLP/gRPC.

Imported only with ``--otlp-endpoint``: the SDK and the exporter are the ``emulator-otlp`` extra. The spans go
through a provider of the emulator's own (service name ``durabletask-emulator``), never the process's global
one, so an application embedding the emulator keeps its tracing as it configured it.
"""

from __future__ import annotations

import time
from typing import Any

from emulator.errors import EmulatorError
from emulator.tracing import Phase, WorkTracer

EXTRA = "emulator-otlp"
SERVICE_NAME = "durabletask-emulator"
#: How long a finished span may wait before its batch is sent (the SDK's default is 5 s).
EXPORT_DELAY_MS = 1000


class OtlpUnavailableError(EmulatorError):
    """``--otlp-endpoint`` was given but the OpenTelemetry SDK or its OTLP exporter is not installed."""


class OtlpExport:
    """The sink of :class:`~emulator.tracing.WorkTracer`: OpenTelemetry spans, batched and sent to ``endpoint``.

    Args:
        endpoint: The collector's OTLP/gRPC address: ``http://host:4317`` for plaintext, ``https://host:4317``
            for TLS (a bare ``host:port`` means TLS, as in the OpenTelemetry exporter).

    Raises:
        OtlpUnavailableError: the ``emulator-otlp`` extra is not installed.
    """

    def __init__(self, endpoint: str) -> None:
        try:
            from opentelemetry import trace
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as error:
            raise OtlpUnavailableError(
                f"--otlp-endpoint needs the OpenTelemetry SDK and OTLP exporter: pip install 'dtscale[{EXTRA}]' "
                f"({error})"
            ) from None
        self.endpoint = endpoint
        self._trace = trace
        self._provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
        self._provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint), schedule_delay_millis=EXPORT_DELAY_MS)
        )
        self._tracer = self._provider.get_tracer("emulator")

    def record(self, phase: Phase) -> None:
        trace = self._trace
        parent = phase.parent
        context = trace.SpanContext(
            trace_id=parent.trace_id,
            span_id=parent.span_id,
            is_remote=True,
            trace_flags=trace.TraceFlags(parent.flags & 0xFF),
            trace_state=_trace_state(trace, parent.trace_state),
        )
        span = self._tracer.start_span(
            phase.name,
            context=trace.set_span_in_context(trace.NonRecordingSpan(context)),
            kind=trace.SpanKind.INTERNAL,
            attributes=phase.attributes,
            start_time=phase.start_ns,
        )
        if phase.error is not None:
            span.record_exception(phase.error)
            span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(phase.error).__name__}: {phase.error}"))
        span.end(end_time=max(phase.start_ns, phase.end_ns))

    def flush(self, timeout: float = 5.0) -> bool:
        """Sends every finished span now; False if that took longer than ``timeout`` seconds."""
        return bool(self._provider.force_flush(int(timeout * 1000)))

    def shutdown(self) -> None:
        self._provider.shutdown()


def _trace_state(trace: Any, text: str | None) -> Any:
    if not text:
        return None
    return trace.TraceState.from_header([text])


def work_tracer(endpoint: str) -> tuple[WorkTracer, OtlpExport]:
    """A tracer exporting to ``endpoint``, and its exporter (to flush and shut down)."""
    export = OtlpExport(endpoint)
    return WorkTracer(export, time.time_ns), export
