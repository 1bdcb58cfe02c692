"""W3C trace context read from the protocol's ``TraceContext``, for the emulator's own spans."""

from __future__ import annotations

from dataclasses import dataclass

from dtscale_emulator.protocol import pb


@dataclass(frozen=True, slots=True)
class Parent:
    """A parsed ``traceparent`` (``00-<trace id>-<span id>-<flags>``): the IDs as integers and the flags."""

    trace_id: int
    span_id: int
    flags: int
    trace_state: str | None = None

    def child(self, span_id: int) -> Parent:
        """The same trace, with ``span_id`` as the span to parent on."""
        return Parent(self.trace_id, span_id, self.flags, self.trace_state)


def _parse(traceparent: str, trace_state: str | None) -> Parent | None:
    version_and_fields = traceparent.strip().split("-")
    if len(version_and_fields) < 4:
        return None
    _, trace_hex, span_hex, flags_hex = version_and_fields[:4]
    if (len(trace_hex), len(span_hex), len(flags_hex)) != (32, 16, 2):
        return None
    try:
        trace_id, span_id, flags = int(trace_hex, 16), int(span_hex, 16), int(flags_hex, 16)
    except ValueError:
        return None
    # All-zero IDs are invalid by the W3C rules: such a context starts no trace.
    return Parent(trace_id, span_id, flags, trace_state or None) if trace_id and span_id else None


def from_proto(proto: pb.TraceContext | None) -> Parent | None:
    """The parent a ``TraceContext`` names, or ``None`` when it is unset or malformed."""
    if proto is None or not proto.traceParent:
        return None
    state = proto.traceState.value if proto.HasField("traceState") else None
    return _parse(proto.traceParent, state)
