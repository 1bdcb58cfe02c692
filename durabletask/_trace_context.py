"""W3C trace context as protocol data: parsing, formatting and new span IDs, without OpenTelemetry (the SDK's
tracing and the emulator's own spans both use it).

The protocol's ``TraceContext`` carries a ``traceparent`` (``00-<trace id>-<span id>-<flags>``), the span ID
again on its own and an optional ``tracestate``. Everything here works on those strings so the worker can
propagate context (``emit_trace_spans=False``) with or without OpenTelemetry installed.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from google.protobuf import wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb

_random = random.SystemRandom()


@dataclass(frozen=True, slots=True)
class Parent:
    """A parsed ``traceparent``: the IDs as integers and the flags."""

    trace_id: int
    span_id: int
    flags: int
    trace_state: str | None = None

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{self.flags:02x}"

    def child(self, span_id: int) -> Parent:
        """The same trace, with ``span_id`` as the span to parent on."""
        return Parent(self.trace_id, span_id, self.flags, self.trace_state)

    def to_proto(self) -> pb.TraceContext:
        proto = pb.TraceContext(traceParent=self.traceparent, spanID=f"{self.span_id:016x}")
        if self.trace_state:
            proto.traceState.CopyFrom(wrappers_pb2.StringValue(value=self.trace_state))
        return proto


def parse_traceparent(traceparent: str, trace_state: str | None = None) -> Parent | None:
    """``None`` for anything but a well-formed ``traceparent`` with non-zero IDs."""
    parts = traceparent.strip().split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or len(parts[2]) != 16 or len(parts[3]) != 2:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return Parent(trace_id, span_id, flags, trace_state or None)


def from_proto(proto: pb.TraceContext | None) -> Parent | None:
    if proto is None or not proto.traceParent:
        return None
    state = proto.traceState.value if proto.HasField("traceState") else None
    return parse_traceparent(proto.traceParent, state)


def field(message: object, name: str) -> Parent | None:
    """The trace context in ``message.<name>`` when that field is set."""
    has = getattr(message, "HasField", None)
    if has is None or not has(name):
        return None
    value: pb.TraceContext = getattr(message, name)
    return from_proto(value)


def new_span_id() -> int:
    span_id = 0
    while not span_id:
        span_id = _random.getrandbits(64)
    return span_id


def stable_trace_id(*parts: str) -> int:
    """A trace ID every worker derives alike, for an orchestration started without one."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1
