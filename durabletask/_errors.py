"""The SDK's exception hierarchy: one root, subclasses ending in ``Error``, and the internal control-flow signals."""

from __future__ import annotations


class DurableTaskError(Exception):
    """Root of every error raised by this SDK (the compatible public names derive from it too)."""


class ProtocolError(DurableTaskError):
    """The peer sent something the Durable Task protocol does not allow."""


class HistoryEventError(ProtocolError, ValueError):
    """A history event without a kind, or of a kind this SDK does not know (a ``ValueError``, as in Microsoft's)."""


class NonFiniteNumberError(DurableTaskError, ValueError):
    """A result holds NaN or an infinity, which JSON cannot carry and the other SDKs' parsers reject."""

    def __init__(self, kind: str) -> None:
        super().__init__(
            f"the value (of type '{kind}') is or holds NaN or an infinity, which JSON cannot represent (Python would"
            " write NaN or Infinity, and the other SDKs reject that payload); use None, a string or a finite number"
        )


class PayloadTooLargeError(DurableTaskError, ValueError):
    """A payload exceeds the configured size limit (1 MiB by default, as in the service)."""

    def __init__(self, field: str, size: int, limit: int, instance_id: str | None = None) -> None:
        owner = f" of instance '{instance_id}'" if instance_id else ""
        super().__init__(
            f"{field}{owner} is {size} bytes after serialization, over the limit of {limit} bytes; "
            "store large data elsewhere and pass a reference"
        )
        self.field = field
        self.size = size
        self.limit = limit
        #: The instance the payload belongs to, when it is known.
        self.instance_id = instance_id


class SerializationError(DurableTaskError, ValueError):
    """A value could not be converted to or from its JSON payload."""


class SyncCallInEventLoopError(DurableTaskError, RuntimeError):
    """A blocking client method was called from inside a running asyncio event loop."""


def exception_message(error: BaseException) -> str:
    """``str(error)``, or a line naming its type when its ``__str__`` raises (user code can define one that does).

    Reporting a failure must never fail in turn: an error raised while describing an error would leave the work
    item neither completed nor handed back.
    """
    try:
        return str(error)
    except BaseException as broken:  # whatever __str__ raises, the failure is still reported
        return f"{type(error).__name__} (its message could not be read: str() raised {type(broken).__name__})"
