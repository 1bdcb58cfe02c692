"""Pages of listings bounded by bytes as well as by count, so an answer always fits a client's receive limit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from google.protobuf.message import Message

#: gRPC's default receive limit, which both SDKs' clients keep unless configured otherwise.
CLIENT_RECEIVE_BYTES = 4 * 1024 * 1024
#: The most a page's items add up to, serialized: the client's limit less room for the answer's other fields
#: (a continuation token of at most 100 characters) and framing. One item always fits: the field limits keep
#: an instance's state (input, output and custom status of 1 MiB each, a failure, tags) under 3.5 MiB.
PAGE_BYTES = CLIENT_RECEIVE_BYTES - 64 * 1024
#: Rows read from the store at a time when a page carries payloads: a page of 1000 rows of a few MiB each
#: would otherwise be held in memory whole, and most of it left out of the page anyway.
PAYLOAD_READ = 16
#: A repeated field's tag and length prefix, at most, around each item.
_FRAMING = 6

Row = TypeVar("Row")
Item = TypeVar("Item")


def wire_size(item: object) -> int:
    """The bytes ``item`` adds to a message as one element of a repeated field."""
    if isinstance(item, Message):
        return item.ByteSize() + _FRAMING
    if isinstance(item, str):
        return len(item.encode("utf-8")) + _FRAMING
    raise TypeError(f"cannot size a page item of type {type(item).__name__}")


class Page(Generic[Row, Item]):
    """Fills one page from rows read in key order, each turned into the item the answer carries.

    Args:
        read: ``read(after, count)``: up to ``count`` rows whose keys follow ``after`` (``None``: the first).
        build: The answer's item for a row.
        key: A row's key, which is also the continuation token of a page ending with that row.
        max_bytes: The most the page's items may add up to (``None``: pages are bounded by count only).
    """

    def __init__(
        self,
        read: Callable[[str | None, int], list[Row]],
        build: Callable[[Row], Item],
        key: Callable[[Row], str],
        max_bytes: int | None,
    ) -> None:
        self._read, self._build, self._key, self._max_bytes = read, build, key, max_bytes

    def fill(self, after: str | None, limit: int, read_size: int) -> tuple[list[Item], str | None]:
        """Up to ``limit`` items after ``after``, and the token of the next page (``None``: this is the last).

        A page holds at least one item, and a token is given only when another row follows, so a client never
        makes a round trip that can only come back empty.
        """
        items: list[Item] = []
        size = 0
        last: Row | None = None
        while True:
            rows = self._read(after, read_size)
            for row in rows:
                if len(items) == limit:
                    return items, self._token(last)
                item = self._build(row)
                if self._max_bytes is not None:
                    grown = size + wire_size(item)
                    if items and grown > self._max_bytes:
                        return items, self._token(last)
                    size = grown
                items.append(item)
                last = row
            if len(rows) < read_size:
                return items, None
            after = self._key(rows[-1])

    def _token(self, last: Row | None) -> str | None:
        return None if last is None else self._key(last)
