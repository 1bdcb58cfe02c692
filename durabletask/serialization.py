"""Pluggable payload serialization: the ``DataConverter`` strategy and the default JSON converter.

Compatible with the ``durabletask.serialization`` module of Microsoft's ``durabletask`` package.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any

from durabletask import _coercion, _json_codec

__all__ = ["DEFAULT_DATA_CONVERTER", "DataConverter", "JsonDataConverter", "logger"]

_logger = logging.getLogger("durabletask")
logger = _logger  # the name Microsoft's module gives it


def _log_fallback(target_type: Any, error: Exception) -> None:
    _logger.debug(
        "payload not rebuilt as %s (%s): returning the parsed value",
        getattr(target_type, "__name__", target_type),
        error,
    )


class DataConverter(ABC):
    """Turns payloads (inputs, outputs, event data, custom status, entity state) into text and back.

    Implementations must be deterministic: the same value must always produce the same text, so
    that orchestration replays agree.
    """

    @abstractmethod
    def serialize(self, value: Any) -> str | None:
        """Text for ``value``; ``None`` when ``value`` is ``None``.

        Args:
            value: Any value the converter supports.

        Raises:
            TypeError: The value cannot be written (the default converter's choice for bytes, sets and other
                objects JSON cannot hold).
        """

    @abstractmethod
    def deserialize(self, data: str | None, target_type: type | None = None) -> Any:
        """The value of ``data`` (``None`` or empty → ``None``), rebuilt as ``target_type`` when given.

        Args:
            data: Text :meth:`serialize` wrote, or ``None``.
            target_type: A class to rebuild the value as (e.g. a dataclass); ``None`` returns the plain value.
        """

    @abstractmethod
    def coerce(self, value: Any, target_type: type | None = None) -> Any:
        """Rebuild an already-parsed value as ``target_type`` (unchanged when ``target_type`` is ``None``).

        Args:
            value: A value already decoded from JSON (e.g. a dict).
            target_type: The class to rebuild it as; ``None`` returns ``value`` unchanged.
        """

    def can_reconstruct(self, target_type: Any) -> bool:
        """Whether annotations of this type should drive reconstruction (``False`` unless overridden).

        Args:
            target_type: A parameter or return annotation.
        """
        return False


class JsonDataConverter(DataConverter):
    """The default converter: the JSON text Microsoft's converter writes (``json.dumps`` defaults).

    Enums are written as their value; dataclasses, ``SimpleNamespace`` and pydantic models as objects;
    classes may write themselves with ``to_json`` and be rebuilt with a ``from_json`` classmethod. Other
    values JSON cannot hold (bytes, sets, datetimes, arbitrary objects) raise ``TypeError``.
    Reconstruction is best-effort: when a payload does not fit ``target_type`` the plain JSON value is
    returned (and logged at debug level) instead of raising. A union of several types is left as parsed.
    """

    def serialize(self, value: Any) -> str | None:
        if value is None:
            return None
        return _json_codec.to_json(value)

    def deserialize(self, data: str | None, target_type: type | None = None) -> Any:
        if data is None or data == "":
            return None
        if target_type is None:
            return _json_codec.from_json(data)
        try:
            return _json_codec.from_json(data, target_type, self)
        except Exception as error:  # best-effort, as Microsoft's: a from_json hook may raise anything
            _log_fallback(target_type, error)
            return _json_codec.from_json(data)

    def coerce(self, value: Any, target_type: type | None = None) -> Any:
        if target_type is None or value is None:
            return value
        try:
            return _coercion.coerce(value, target_type, self)
        except Exception as error:
            _log_fallback(target_type, error)
            return value

    def can_reconstruct(self, target_type: Any) -> bool:
        return _coercion.reconstructable(target_type)


#: The converter used when none is configured.
DEFAULT_DATA_CONVERTER: DataConverter = JsonDataConverter()
