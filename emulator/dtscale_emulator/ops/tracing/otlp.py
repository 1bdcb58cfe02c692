"""Records the emulator's work-item spans with the OpenTelemetry SDK and exports them over OTLP/gRPC.

Used only with ``--otlp-endpoint``: the SDK and the exporter are the ``otlp`` extra, imported when the
exporter is made. The spans go to an exporter of the emulator's own (resource ``service.name``
``durabletask-emulator``), never through the process's global tracer provider, so an application embedding the
emulator keeps its tracing as it configured it.
"""

from __future__ import annotations

import time
from typing import Any

from dtscale_emulator.errors import EmulatorError
from dtscale_emulator.ops.tracing import Phase, WorkTracer

EXTRA = "otlp"
#: The environment's way to give ``--otlp-endpoint`` (as the Docker image's other settings are given).
ENDPOINT_ENV = "DTS_EMULATOR_OTLP_ENDPOINT"
SERVICE_NAME = "durabletask-emulator"
#: How long a finished span may wait before its batch is sent (the SDK's default is 5 s).
EXPORT_DELAY_MS = 1000
#: Spans waiting for export before new ones are dropped: about 20 per orchestration, so the SDK's 2,048 would
#: overflow within a second at the emulator's throughput whenever the collector is slow.
MAX_QUEUED = 65_536
BATCH = 2_048
SAMPLED = 0x01


class OtlpUnavailableError(EmulatorError):
    """``--otlp-endpoint`` was given but the OpenTelemetry SDK or its OTLP exporter is not installed."""


class OtlpExport:
    """The sink of :class:`~dtscale_emulator.ops.tracing.WorkTracer`: OpenTelemetry spans, sent to ``endpoint``.

    Args:
        endpoint: The collector's OTLP/gRPC address: ``http://host:4317`` for plaintext, ``https://host:4317``
            for TLS (a bare ``host:port`` means TLS, as in the OpenTelemetry exporter).

    Raises:
        OtlpUnavailableError: the ``otlp`` extra is not installed.
    """

    def __init__(self, endpoint: str) -> None:
        try:
            from opentelemetry import trace
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk import trace as sdk
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
            from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        except ImportError as error:
            raise OtlpUnavailableError(
                "--otlp-endpoint needs the OpenTelemetry SDK and OTLP exporter: "
                f"pip install 'dtscale-emulator[{EXTRA}]' ({error})"
            ) from None
        self.endpoint = endpoint
        self._trace, self._sdk = trace, sdk
        self._resource = Resource.create({"service.name": SERVICE_NAME})
        self._scope = InstrumentationScope("emulator")
        self._ids = RandomIdGenerator()
        self._processor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=endpoint),
            max_queue_size=MAX_QUEUED,
            max_export_batch_size=BATCH,
            schedule_delay_millis=EXPORT_DELAY_MS,
        )

    def record(self, phase: Phase) -> None:
        """Hands one finished span to the batch exporter.

        Each phase is over when the emulator learns of it, with both times known, so the span is built finished
        (a ``ReadableSpan`` for the processor) instead of started and ended through a tracer: the live-span
        path validates, samples and locks for each span and cost several times more emulator CPU.
        """
        parent = phase.parent
        if not parent.flags & SAMPLED:
            return  # whoever started the trace chose not to record it
        trace, sdk = self._trace, self._sdk
        flags = trace.TraceFlags(parent.flags & 0xFF)
        state = trace.TraceState.from_header([parent.trace_state]) if parent.trace_state else None
        remote = trace.SpanContext(parent.trace_id, parent.span_id, True, flags, state)
        own = trace.SpanContext(parent.trace_id, self._ids.generate_span_id(), False, flags, state)
        status = sdk.Status(sdk.StatusCode.UNSET)
        events: tuple[Any, ...] = ()
        if phase.error is not None:
            error = phase.error
            status = sdk.Status(sdk.StatusCode.ERROR, f"{type(error).__name__}: {error}")
            events = (sdk.Event("exception", {"exception.type": type(error).__name__, "exception.message": str(error)},
                                phase.end_ns),)  # fmt: skip
        span = sdk.ReadableSpan(
            phase.name,
            context=own,
            parent=remote,
            resource=self._resource,
            attributes=phase.attributes,
            events=events,
            kind=trace.SpanKind.INTERNAL,
            status=status,
            start_time=phase.start_ns,
            end_time=max(phase.start_ns, phase.end_ns),
            instrumentation_scope=self._scope,
        )
        self._processor.on_end(span)

    def flush(self, timeout: float = 5.0) -> bool:
        """Sends every finished span now; False if that took longer than ``timeout`` seconds."""
        return bool(self._processor.force_flush(int(timeout * 1000)))

    def shutdown(self) -> None:
        self._processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated


def work_tracer(endpoint: str) -> tuple[WorkTracer, OtlpExport]:
    """A tracer exporting to ``endpoint``, and its exporter (to flush and shut down)."""
    export = OtlpExport(endpoint)
    return WorkTracer(export, time.time_ns), export
