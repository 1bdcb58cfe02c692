"""Payload encoding for the replay runtime: the default JSON codec or a user ``DataConverter``, plus size limits."""

from __future__ import annotations

from collections.abc import Callable
from json.decoder import JSONDecoder
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any, Protocol

from durabletask import _coercion, _json_codec
from durabletask.serialization import DEFAULT_DATA_CONVERTER

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter

# Replay encodes every call's input and decodes every result, so the common scalar cases skip the
# general machinery (a fresh JSONEncoder per call, regex whitespace checks). Output is identical to
# ``_json_codec.to_json`` / ``_json_codec.from_json``.
# The decoder's C scanner: typeshed does not declare the attribute.
_scan_once: Callable[[str, int], tuple[Any, int]] = JSONDecoder().scan_once  # type: ignore[attr-defined]
_int_repr = int.__repr__


class PayloadSource(Protocol):
    """Payloads kept out of the messages the core reads: a token stands in the message for each one.

    With a payload store, the worker's boundary fetches them when the work item arrives and hands them over
    here, one at a time, as each is decoded: the text then never sits in the message beside the decoded value
    (protobuf keeps a message's strings for as long as any part of it is referenced).
    """

    def resolve(self, text: str) -> str:
        """The payload ``text`` stands for when it is a token, else ``text`` itself."""
        ...


class Codec:
    """Encodes outgoing payloads (enforcing the size limit) and decodes incoming ones."""

    __slots__ = ("_converter", "_payloads", "instance_id", "limit")

    def __init__(
        self,
        converter: DataConverter | None = None,
        limit: int = _json_codec.MAX_PAYLOAD_BYTES,
        instance_id: str | None = None,
        payloads: PayloadSource | None = None,
    ) -> None:
        self._converter = converter
        self.limit = limit
        #: Named in the size-limit error, so it says whose payload was too large.
        self.instance_id = instance_id
        self._payloads = payloads

    def for_instance(self, instance_id: str) -> Codec:
        """This codec, naming ``instance_id`` in its errors."""
        return Codec(self._converter, self.limit, instance_id, self._payloads)

    def encode(self, value: Any, field: str, name: str = "", *, finite: bool = False) -> str | None:
        """JSON text for ``value`` (``None`` stays absent).

        Raises ``PayloadTooLargeError`` naming ``field`` (formatted with ``name``: the message is only
        built when needed). With ``finite`` (and no custom converter, which decides for itself), NaN and the
        infinities raise ``NonFiniteNumberError`` instead of being written as ``NaN``/``Infinity``.
        """
        if value is None:
            return None
        kind = type(value)
        if self._converter is not None:
            text = self._converter.serialize(value)
        elif kind is int:
            text = _int_repr(value)
        elif kind is str:
            text = encode_basestring_ascii(value)
        elif kind is bool:
            text = "true" if value else "false"
        else:
            text = _json_codec.to_json(value, finite=finite)
        if text is not None and len(text) * 4 > self.limit:
            _json_codec.check_size(field.format(name), text, self.limit, self.instance_id)
        return text

    def resolve(self, text: str | None) -> str | None:
        """The payload's text when ``text`` is a token standing for it, else ``text``.

        For a payload kept undecoded (an event no one waits for yet): fetched with the work item that brought it,
        it is taken now, so decoding it in a later turn of a kept session needs no store.
        """
        if not text or self._payloads is None:
            return text
        return self._payloads.resolve(text)

    def decode(self, text: str | None, target_type: Any = None) -> Any:
        """The value of a JSON payload (empty → ``None``), rebuilt as ``target_type`` when given."""
        if not text:
            return None
        if self._payloads is not None:
            # The caller keeps the token; the payload's text lives only in this frame while it is decoded.
            text = self._payloads.resolve(text)
        if self._converter is not None:
            return self._converter.deserialize(text, target_type)
        # Untyped, or typed as a plain JSON type (e.g. ``get_state(int)``): the value parsed is the result when its
        # type is the one asked for. (``type(...) is type`` first: only a plain class is looked up in the set.)
        plain = target_type is None or (type(target_type) is type and target_type in _json_codec.JSON_TYPES)
        if plain and _json_codec.AUTO_OBJECT_MARKER not in text:
            try:
                value, end = _scan_once(text, 0)
            except (StopIteration, ValueError):
                pass  # leading whitespace or invalid JSON: the general path explains it
            else:
                if end == len(text) and (target_type is None or type(value) is target_type):
                    return value
        # Best-effort as the default converter is (the raw value when the payload does not fit the type); it is
        # also what a ``from_json(cls, value, converter)`` hook is given.
        return DEFAULT_DATA_CONVERTER.deserialize(text, target_type)

    def can_reconstruct(self, annotation: Any) -> bool:
        """Whether payloads for a function annotated ``annotation`` are rebuilt as it (the converter decides)."""
        if annotation is None:
            return False
        if self._converter is None:
            return _coercion.reconstructable(annotation)
        return bool(self._converter.can_reconstruct(annotation))

    def payload_type(self, annotation: Any) -> Any:
        """``annotation`` when the converter rebuilds it, else ``None`` (the payload is passed as parsed)."""
        return annotation if self.can_reconstruct(annotation) else None
