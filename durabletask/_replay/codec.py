"""Payload encoding for the replay runtime: the default JSON codec or a user ``DataConverter``, plus size limits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from durabletask import _payload

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter


class Codec:
    """Encodes outgoing payloads (enforcing the size limit) and decodes incoming ones."""

    __slots__ = ("_converter", "limit")

    def __init__(self, converter: DataConverter | None = None, limit: int = _payload.MAX_PAYLOAD_BYTES) -> None:
        self._converter = converter
        self.limit = limit

    def encode(self, value: Any, field: str) -> str | None:
        """JSON text for ``value`` (``None`` stays absent); raises ``PayloadTooLargeError`` naming ``field``."""
        if value is None:
            return None
        if self._converter is None:
            return _payload.encode(value, field, self.limit)
        text = self._converter.serialize(value)
        _payload.check_size(field, text, self.limit)
        return text

    def decode(self, text: str | None, target_type: Any = None) -> Any:
        """The value of a JSON payload (empty → ``None``), rebuilt as ``target_type`` when given."""
        if not text:
            return None
        if self._converter is None:
            return _payload.from_json(text, target_type)
        return self._converter.deserialize(text, target_type)
