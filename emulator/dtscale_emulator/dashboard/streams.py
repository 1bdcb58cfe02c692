"""An instance's durable stream items, read page by page from the stream's entities for the instance page.

The SDK stores an instance's stream in entities, over the public protocol only: a head ``@dtscale.stream@<ID>``
(JSON ``{"next", "first", "items", "segs", ...}``: the newest items, the next offset, the first offset still
retained and the index of sealed segments ``[number, first offset, last offset, bytes]``) and sealed segments
``@dtscale.streamsegment@<n>|<ID>`` (JSON ``{"items": [...]}``). A stored item is ``[offset, topic, data (JSON
text), time (ISO, UTC), task ID, attempt]``. Items dropped over the instance's retention cap are announced by one
``$dropped`` marker, as subscribers see it. Cursors are the SDK's (``item.id``), so a cursor copied from the page
resumes ``durabletask follow --after`` and the other way round. The dashboard imports no SDK: it reads the format
here, and a test writes it with the SDK and reads it back with this module.

A page of items is bounded three ways: by ``limit`` items, by :data:`MAX_PAGE_BYTES` of data, and by cutting each
item's data at :data:`MAX_DATA_CHARS`; the reads behind it are the head and the sealed segments the page reaches.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

HEAD_ENTITY = "dtscale.stream"
SEGMENT_ENTITY = "dtscale.streamsegment"
DROPPED_TOPIC = "$dropped"
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
#: The most item data and topics (in characters) one page carries; a page always carries at least one item.
MAX_PAGE_BYTES = 512 * 1024
#: The most of one item's data a page carries; longer data is cut, and the page says how long it was.
MAX_DATA_CHARS = 4096

#: Reads an entity's serialized state (``None``: no such entity).
ReadState = Callable[[str], Awaitable[str | None]]


class StreamFormatError(RuntimeError):
    """The stream's stored state is not of the format this dashboard reads (the page shows why, as a conflict)."""


#: Instance IDs up to this length are their stream's key; longer ones are shortened (the SDK's stream_key).
PLAIN_KEY_CHARS = 64


def stream_key(instance_id: str) -> str:
    if len(instance_id) <= PLAIN_KEY_CHARS:
        return instance_id
    digest = hashlib.sha256(instance_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{instance_id[:32]}~{digest}"


def head_id(instance_id: str) -> str:
    return f"@{HEAD_ENTITY}@{stream_key(instance_id)}"


def segment_id(instance_id: str, number: int) -> str:
    return f"@{SEGMENT_ENTITY}@{number}|{stream_key(instance_id)}"


def _fingerprint(instance_id: str) -> str:
    return hashlib.sha256(instance_id.encode("utf-8")).hexdigest()[:8]


def make_cursor(instance_id: str, offset: int) -> str:
    """The cursor of the item at ``offset``, exactly as the SDK writes ``item.id``."""
    return f"{offset:012d}-{_fingerprint(instance_id)}"


def parse_cursor(instance_id: str, cursor: str) -> int:
    """The offset a cursor names, checked to belong to ``instance_id``.

    Raises:
        ValueError: ``cursor`` is malformed or names an item of another instance (the message names ``after``).
    """
    offset_text, sep, fingerprint = cursor.partition("-")
    if not sep or len(offset_text) != 12 or not offset_text.isdigit() or len(fingerprint) != 8:
        shown = cursor if len(cursor) <= 40 else f"{cursor[:40]}..."
        raise ValueError(f"after: {shown!r} is not a stream cursor (an item's id, e.g. 000000000041-1a2b3c4d)")
    if fingerprint != _fingerprint(instance_id):
        raise ValueError(f"after: the cursor {cursor!r} belongs to another instance, not to {instance_id!r}")
    return int(offset_text)


def _whole(query: Mapping[str, str], name: str, default: int) -> int:
    text = query.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or len(text) > 9:
        raise ValueError(f"{name} must be a whole number between 1 and {MAX_LIMIT}, not {text[:20]!r}")
    value = int(text)
    if not 1 <= value <= MAX_LIMIT:
        raise ValueError(f"{name} must be between 1 and {MAX_LIMIT}, not {value}")
    return value


@dataclass(frozen=True)
class PageRequest:
    """Where a page starts (after the item ``after``, or the newest ``tail`` items) and how many items it holds."""

    instance_id: str
    after: int = -1
    tail: int | None = None
    limit: int = DEFAULT_LIMIT

    @staticmethod
    def parse(instance_id: str, query: Mapping[str, str]) -> PageRequest:
        """Reads ``after`` (a cursor), ``tail`` and ``limit`` (each 1 to :data:`MAX_LIMIT`) from the page's query."""
        after_text = query.get("after", "")
        if after_text and query.get("tail"):
            raise ValueError("after and tail: give one of them, not both")
        after = parse_cursor(instance_id, after_text) if after_text else -1
        tail = _whole(query, "tail", 0) or None
        return PageRequest(instance_id, after, tail, _whole(query, "limit", DEFAULT_LIMIT if tail is None else tail))


def _state(text: str | None, what: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        raise StreamFormatError(f"the {what}'s state is not JSON (is it kept in a payload store?)") from None
    if not isinstance(found, dict):
        raise StreamFormatError(f"the {what}'s state is not a JSON object")
    return found


def _shown(instance_id: str, stored: list[Any]) -> dict[str, Any]:
    offset, topic, data, when, task_id, attempt = stored
    text = "" if data is None else str(data)
    try:
        time = datetime.fromisoformat(str(when)).replace(tzinfo=timezone.utc).isoformat()
    except ValueError:
        raise StreamFormatError(f"stream item {offset}: its time {when!r:.40} is not an ISO 8601 time") from None
    return {
        "id": make_cursor(instance_id, int(offset)),
        "topic": str(topic),
        "time": time,
        "task_id": task_id,
        "attempt": attempt,
        "data": text[:MAX_DATA_CHARS],
        "data_length": len(text),
        "truncated": len(text) > MAX_DATA_CHARS,
    }


def _marker(instance_id: str, dropped: int, last_dropped: int) -> dict[str, Any]:
    data = json.dumps({"dropped": dropped, "reason": "the instance's items exceeded its retention cap"})
    return {
        "id": make_cursor(instance_id, last_dropped),
        "topic": DROPPED_TOPIC,
        "time": datetime.now(timezone.utc).isoformat(),
        "task_id": None,
        "attempt": None,
        "data": data,
        "data_length": len(data),
        "truncated": False,
    }


class _Page:
    """The items a page collects, within its item and byte budgets."""

    def __init__(self, request: PageRequest, position: int) -> None:
        self.request = request
        self.position = position  # the offset of the last item taken (or skipped as not shown)
        self.items: list[dict[str, Any]] = []
        self.size = 0

    @property
    def full(self) -> bool:
        return len(self.items) >= self.request.limit or self.size >= MAX_PAGE_BYTES

    def take(self, stored: list[Any]) -> None:
        if not isinstance(stored, list) or len(stored) != 6 or not isinstance(stored[0], int):
            shape = "[offset, topic, data, time, task, attempt]"
            raise StreamFormatError(f"a stored stream item is not {shape}: {stored!r:.80}")
        if stored[0] <= self.position or self.full:
            return
        shown = _shown(self.request.instance_id, stored)
        self.items.append(shown)
        self.size += len(shown["data"]) + len(shown["topic"])
        self.position = stored[0]


async def read_page(request: PageRequest, read: ReadState) -> dict[str, Any]:
    """One page of the instance's items after the request's position, and where the next page starts.

    The answer: ``items``; ``next`` (the cursor to ask the next page with, ``None`` while nothing was read);
    ``more`` (more items are stored after this page); ``newest`` (the newest stored item's cursor, ``None`` while
    the stream is empty), ``skipped`` (retained items before the page's start that a ``tail`` page left out) and
    ``dropped`` (how many of the oldest items the retention cap has dropped so far); ``position`` is what the live
    feed watches (see :func:`position`).
    """
    instance_id = request.instance_id
    head = _state(await read(head_id(instance_id)), "stream head")
    if head is None:
        return {
            "items": [],
            "next": _cursor_or_none(request, request.after),
            "more": False,
            "newest": None,
            "skipped": 0,
            "dropped": 0,
            "position": "",
        }
    try:
        next_offset, first = int(head["next"]), int(head["first"])
        segments = [(int(seg[0]), int(seg[2])) for seg in head["segs"]]  # [number, first, last, bytes]
        items = list(head["items"])
    except (KeyError, IndexError, TypeError, ValueError):
        raise StreamFormatError("the stream head's state lacks next, first, segs or items") from None
    # A tail page starts at the newest items still retained; a dropped marker is for readers that move forward.
    start = request.after if request.tail is None else max(first - 1, next_offset - 1 - request.tail)
    skipped = start + 1 - first if request.tail is not None else 0
    page = _Page(request, start)
    if start + 1 < first:  # items this reader has not seen were dropped over the retention cap
        page.items.append(_marker(instance_id, first - (start + 1), first - 1))
        page.position = first - 1
    for number, last in segments:
        if page.full:
            break
        if last <= page.position:
            continue
        segment = _state(await read(segment_id(instance_id, number)), "stream segment")
        if segment is None:  # sealed by the head, not yet stored by its segment: the next page reads it
            break
        for stored in segment.get("items", []):
            page.take(stored)
    else:
        for stored in items:
            page.take(stored)
    return {
        "items": page.items,
        "next": _cursor_or_none(request, page.position),
        "more": page.position < next_offset - 1,
        "newest": make_cursor(instance_id, next_offset - 1) if next_offset > 0 else None,
        "skipped": skipped,
        "dropped": first,
        "position": _position(head),
    }


def _cursor_or_none(request: PageRequest, offset: int) -> str | None:
    return make_cursor(request.instance_id, offset) if offset >= 0 else None


def _position(head: dict[str, Any] | None) -> str:
    return "" if head is None else f"{head.get('next')}:{head.get('first')}"


async def position(instance_id: str, read: ReadState) -> str:
    """What changes when items are stored or dropped (``position`` in a page): the live feed watches it."""
    return _position(_state(await read(head_id(instance_id)), "stream head"))
