"""The large-payload store interface and the options every store shares (Microsoft's names and defaults)."""

from __future__ import annotations

import abc
import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

# What ``from durabletask.payload.store import *`` gives in Microsoft's module; the token and packing helpers
# below are ours and are imported by name.
__all__ = ["LargePayloadStorageOptions", "PayloadStore"]

#: Every token names the blob holding a payload: ``blob:v1:<container>:<blob name>``, as the other SDKs write it.
TOKEN_PREFIX = "blob:v1:"


@dataclass
class LargePayloadStorageOptions:
    """When payloads leave the message for the store.

    Attributes:
        threshold_bytes: A payload whose UTF-8 text is longer than this is stored externally (256 KiB).
        max_stored_payload_bytes: The largest payload a store accepts (10 MiB); a larger one is an error.
        enable_compression: Gzip payloads before they are stored (on by default).
    """

    threshold_bytes: int = 256 * 1024
    max_stored_payload_bytes: int = 10 * 1024 * 1024
    enable_compression: bool = True


class PayloadStore(abc.ABC):
    """Where externalized payloads live; a token in the message stands for each one."""

    @property
    @abc.abstractmethod
    def options(self) -> LargePayloadStorageOptions:
        """The threshold, size limit and compression this store works with."""

    @abc.abstractmethod
    def upload(self, data: bytes, *, instance_id: str | None = None) -> str:
        """Store ``data`` (under ``instance_id`` when given) and return the token that fetches it back.

        ``data`` is ``bytes``, unless the store sets ``reads_buffers`` (then any bytes-like object) or
        ``reads_text`` (then possibly the payload's ``str``, to be written as UTF-8).

        Args:
            data: The payload's bytes (already its UTF-8 text).
            instance_id: The orchestration instance the payload belongs to, so stores can group (and later delete)
                an instance's payloads; ``None`` when it is not known.

        Returns:
            A token that :meth:`is_known_token` recognizes; the message carries it in place of the payload.
        """

    @abc.abstractmethod
    async def upload_async(self, data: bytes, *, instance_id: str | None = None) -> str:
        """:meth:`upload` for asyncio callers.

        Args:
            data: The payload's bytes.
            instance_id: The instance the payload belongs to, or ``None``.
        """

    @abc.abstractmethod
    def download(self, token: str) -> bytes:
        """The bytes stored under ``token``.

        Args:
            token: A token :meth:`upload` returned.

        Raises:
            ValueError: ``token`` is not one of this store's tokens.
        """

    @abc.abstractmethod
    async def download_async(self, token: str) -> bytes:
        """:meth:`download` for asyncio callers.

        Args:
            token: A token :meth:`upload` returned.
        """

    @abc.abstractmethod
    def is_known_token(self, value: str) -> bool:
        """Whether ``value`` is a token this store can resolve.

        Args:
            value: A payload's text as found in a message; called for every payload, so it should be cheap.
        """


def parse_token(token: str) -> tuple[str, str]:
    """``(container, blob name)`` of a ``blob:v1:`` token; ``ValueError`` naming the token when it is not one."""
    if token.startswith(TOKEN_PREFIX):
        container, sep, name = token[len(TOKEN_PREFIX) :].partition(":")
        if sep and container and name:
            return container, name
    shown = token if len(token) <= 80 else token[:80] + "..."
    raise ValueError(f"not a payload token (expected 'blob:v1:<container>:<blob name>'): {shown!r}")


def make_token(container: str, blob_name: str) -> str:
    """The token for a stored payload."""
    return f"{TOKEN_PREFIX}{container}:{blob_name}"


_GZIP_MAGIC = b"\x1f\x8b"


#: How much of a payload gzip is fed at a time: its output is written out as it comes, never joined.
_PACK_CHUNK = 256 * 1024


def pack(data: bytes | memoryview | str, compress: bool) -> bytes:
    """What a store writes for ``data`` (any bytes-like object, or text written as UTF-8): gzipped when
    ``compress`` is set."""
    if not compress:
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    out = io.BytesIO()
    pack_into(out, data, compress)
    return out.getvalue()


def _pieces(data: bytes | memoryview | str) -> Iterator[bytes | memoryview]:
    # Text is encoded a piece at a time: its whole UTF-8 copy never exists beside it.
    if isinstance(data, str):
        for start in range(0, len(data), _PACK_CHUNK):
            yield data[start : start + _PACK_CHUNK].encode("utf-8")
        return
    view = memoryview(data).cast("B")
    for start in range(0, len(view), _PACK_CHUNK):
        yield view[start : start + _PACK_CHUNK]


def pack_into(out: BinaryIO, data: bytes | memoryview | str, compress: bool) -> None:
    """Write what a store keeps for ``data`` to ``out``, in pieces, gzipped when ``compress`` is set.

    ``gzip.compress`` gathers its output in blocks and then joins them: two copies of the compressed payload
    at once, on top of the payload. Written in pieces, the output exists once, in ``out`` (or only on disk).
    """
    if not compress:
        for piece in _pieces(data):
            out.write(piece)
        return
    # No file name and no time in the header: the stored bytes depend on the payload alone.
    with gzip.GzipFile(filename="", fileobj=out, mode="wb", compresslevel=6, mtime=0) as gz:
        for piece in _pieces(data):
            gz.write(piece)


def unpack(stored: bytes) -> bytes:
    """The payload of a stored blob, gzipped or not.

    A payload is UTF-8 text, which never starts with the gzip magic bytes, so a reader need not be configured
    like the writer (a store with compression off still reads what a compressing writer stored).
    """
    return unpack_from(io.BytesIO(stored)) if stored[:2] == _GZIP_MAGIC else stored


def unpack_from(source: BinaryIO) -> bytes:
    """:func:`unpack` reading from a file: gunzipped in pieces into one buffer that becomes the result.

    ``gzip.decompress`` copies its input, then gathers its output in blocks and joins them: the payload twice
    and its gzip twice at once. Here only the payload and a piece of the input are held.
    """
    magic = source.read(2)
    source.seek(0)
    if magic != _GZIP_MAGIC:
        return source.read()
    out = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=source, mode="rb") as gz:
        while piece := gz.read(_PACK_CHUNK):
            out.write(piece)
    return out.getvalue()  # the buffer itself, trimmed, not a copy
