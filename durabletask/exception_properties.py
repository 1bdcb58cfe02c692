"""Custom properties recorded with a failure: the provider protocol and the worker's safe use of it.

Compatible with the ``durabletask.exception_properties`` module of Microsoft's ``durabletask`` package.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from google.protobuf import struct_pb2

__all__ = ["ExceptionPropertiesProvider"]

#: Reads the properties of one exception for its failure details (``None``: none).
PropertiesReader = Callable[[BaseException], "dict[str, struct_pb2.Value] | None"]


class ExceptionPropertiesProvider(Protocol):
    """Extracts portable custom properties from an exception, recorded with its failure details.

    The worker asks it for every failure it records (activities, orchestrators, entity operations) and for
    each exception in the failure's cause chain. Values may be ``None``, booleans, numbers, strings,
    mappings and sequences of them; anything else is recorded as its ``str()``.
    """

    def get_exception_properties(self, exception: Exception) -> Mapping[str, Any] | None:
        """The properties to record for ``exception``, or ``None``.

        Args:
            exception: The exception being recorded (one of the failure's cause chain).
        """
        ...


def to_value(value: Any) -> struct_pb2.Value:
    """A protobuf ``Value`` for a portable Python value (other objects become their ``str()``)."""
    if value is None:
        return struct_pb2.Value(null_value=struct_pb2.NULL_VALUE)
    if isinstance(value, bool):
        return struct_pb2.Value(bool_value=value)
    if isinstance(value, (int, float, Decimal)):
        return struct_pb2.Value(number_value=float(value))
    if isinstance(value, str):
        return struct_pb2.Value(string_value=value)
    if isinstance(value, Mapping):
        fields = {str(k): to_value(v) for k, v in value.items()}
        return struct_pb2.Value(struct_value=struct_pb2.Struct(fields=fields))
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return struct_pb2.Value(list_value=struct_pb2.ListValue(values=[to_value(v) for v in value]))
    return struct_pb2.Value(string_value=str(value))


def properties_reader(provider: ExceptionPropertiesProvider | None, logger: logging.Logger) -> PropertiesReader | None:
    """A function giving ``provider``'s properties for an exception, never raising (``None`` without one).

    A provider that raises, or returns something other than a mapping or ``None``, is logged as a warning and
    the failure is recorded without properties: a faulty provider must not hide the failure itself.
    """
    if provider is None:
        return None

    def read(error: BaseException) -> dict[str, struct_pb2.Value] | None:
        name = type(error).__qualname__
        try:
            found = provider.get_exception_properties(error)  # type: ignore[arg-type]
        except Exception:
            logger.warning("the exception properties provider failed for %s; recording none", name, exc_info=True)
            return None
        if found is None:
            return None
        if not isinstance(found, Mapping):
            logger.warning(
                "the exception properties provider returned %s for %s, not a mapping; recording none",
                type(found).__name__,
                name,
            )
            return None
        try:
            return {str(key): to_value(value) for key, value in found.items()}
        except Exception:  # e.g. a self-referencing structure
            logger.warning("the exception properties for %s cannot be recorded", name, exc_info=True)
            return None

    return read
