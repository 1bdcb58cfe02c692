"""What a stream looks like in storage: entity IDs, cursors, limits, batches and the item model, shared by all sides."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from durabletask._codec import Codec
from durabletask._errors import DurableTaskError, PayloadTooLargeError
from durabletask.entities.entity_instance_id import EntityInstanceId

#: The entity holding an instance's newest items and the index of its sealed segments (key: the instance ID).
HEAD_ENTITY = "dtscale.stream"
#: The entity holding one sealed segment (key: ``<number>|<instance ID>``).
SEGMENT_ENTITY = "dtscale.streamsegment"
#: The operation appending a batch of items to a head.
APPEND = "append"
#: The operation removing a head and its segments (sent when the instance is purged).
PURGE = "purge"

DEFAULT_TOPIC = "default"
#: The topic of the marker a subscriber sees where items were dropped to keep the instance under its cap.
DROPPED_TOPIC = "$dropped"

#: One item's serialized value and topic. Entity state on managed DTS has a practical ceiling of about 1 MB,
#: and a head holds a segment plus one batch; this keeps a single item far from that.
MAX_ITEM_BYTES = 64 * 1024
#: What one orchestrator turn may publish: its items travel in one entity signal, a 1 MiB payload at most.
MAX_TURN_BYTES = 512 * 1024
#: What one activity signal carries at most (an activity flushes earlier when it has this much).
MAX_BATCH_BYTES = 256 * 1024
#: A head seals its items into a segment entity once they hold this much.
SEGMENT_BYTES = 64 * 1024
#: The default per-instance cap on retained items; past it the oldest are dropped (with a marker).
DEFAULT_MAX_INSTANCE_BYTES = 64 * 1024 * 1024

#: The orchestrator action ID of a turn's stream signal. It is outside the range of the orchestration's own
#: sequence numbers so that publishing never shifts the IDs of the durable calls the code makes.
ORCHESTRATOR_ACTION_ID = 2**31 - 1

_STREAM_NAMESPACE = uuid.UUID("5f0c6d1e-3b2a-4c52-9a77-0e5d3f1c2b48")


class StreamError(DurableTaskError):
    """Root of the errors of durable streams."""


class StreamNotFoundError(StreamError, LookupError):
    """``subscribe`` named an instance that does not exist (or was purged)."""


class StreamCursorError(StreamError, ValueError):
    """A cursor (``after=``, ``Last-Event-ID``) that is malformed or belongs to another instance."""


class PublishError(StreamError, RuntimeError):
    """``publish`` was called where no item can be published (outside a running orchestration or activity)."""


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One published item, as a subscriber receives it.

    Attributes:
        id: An opaque cursor, increasing within the instance; pass it as ``after=`` to resume after this item.
        topic: The topic it was published to.
        data: The published value, decoded by the client's data converter.
        time: When it was published (UTC): the orchestration's clock for orchestrator items.
        task_id: The publishing activity's task ID; ``None`` for the orchestrator.
        attempt: The publishing activity's attempt (1, 2, ...); ``None`` for the orchestrator.
    """

    id: str
    topic: str
    data: Any
    time: datetime
    task_id: int | None = None
    attempt: int | None = None


#: The longest instance ID used as it is in its stream's entity keys. Entity IDs are capped at 100 characters
#: (DTS's limit) and the longest, a segment's ``@dtscale.streamsegment@<number>|<key>``, leaves 66 for the key
#: with segment numbers of up to ten digits; longer IDs get a key of 65 characters that no plain key can equal.
PLAIN_KEY_CHARS = 64


def stream_key(instance_id: str) -> str:
    """The key of ``instance_id``'s stream entities: the ID itself, or for a long ID its start and a hash."""
    if len(instance_id) <= PLAIN_KEY_CHARS:
        return instance_id
    digest = hashlib.sha256(instance_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{instance_id[:32]}~{digest}"


def head_entity(instance_id: str) -> EntityInstanceId:
    """The head entity of ``instance_id``'s stream."""
    return EntityInstanceId(HEAD_ENTITY, stream_key(instance_id))


def segment_entity(instance_id: str, number: int) -> EntityInstanceId:
    """The entity holding sealed segment ``number`` of ``instance_id``'s stream."""
    return segment_of_key(stream_key(instance_id), number)


def segment_of_key(key: str, number: int) -> EntityInstanceId:
    """The segment entity ``number`` of the stream whose head has the key ``key`` (see :func:`stream_key`)."""
    return EntityInstanceId(SEGMENT_ENTITY, f"{number}|{key}")


def is_head(target: str) -> bool:
    """Whether an entity ID (``@name@key``) names a stream head: how replay recognizes a turn's stream signal."""
    return target.startswith(f"@{HEAD_ENTITY}@")


def _fingerprint(instance_id: str) -> str:
    return hashlib.sha256(instance_id.encode("utf-8")).hexdigest()[:8]


def make_cursor(instance_id: str, offset: int) -> str:
    """The cursor of the item at ``offset``: zero-padded, so cursors also sort as strings."""
    return f"{offset:012d}-{_fingerprint(instance_id)}"


def parse_cursor(instance_id: str, cursor: str | None) -> int:
    """The offset a cursor names (``-1`` for ``None``: from the start), checked to belong to ``instance_id``."""
    if cursor is None:
        return -1
    if not isinstance(cursor, str):
        raise StreamCursorError(f"after: a cursor is a string (an item's id), got {type(cursor).__name__}")
    offset_text, sep, fingerprint = cursor.partition("-")
    if not sep or len(offset_text) != 12 or not offset_text.isdigit() or len(fingerprint) != 8:
        raise StreamCursorError(f"after: {cursor!r} is not a stream cursor (expected an item's id, e.g. from item.id)")
    if fingerprint != _fingerprint(instance_id):
        raise StreamCursorError(f"after: the cursor {cursor!r} belongs to another instance, not to '{instance_id}'")
    return int(offset_text)


def check_topic(topic: Any) -> str:
    """A topic is a non-empty string; the ``$`` prefix is reserved for markers."""
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"topic: expected a non-empty string, got {topic!r}")
    if topic.startswith("$"):
        raise ValueError(f"topic: {topic!r} starts with '$', which is reserved for stream markers")
    return topic


def encode_item(codec: Codec, value: Any, topic: str, when: datetime) -> list[Any]:
    """The stored form of a published value, with errors that say which publish failed and why."""
    check_topic(topic)
    try:
        encoded = codec.encode(value, "published item on topic '{}'", topic)
    except PayloadTooLargeError:
        raise
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"publish: the value on topic {topic!r} ({type(value).__name__}) cannot be serialized by the data "
            f"converter: {error}"
        ) from error
    return item_entry(topic, encoded, when)


def item_entry(topic: str, encoded: str | None, when: datetime) -> list[Any]:
    """The stored form of one item before the head gives it an offset, checked against the per-item limit."""
    size = len(topic.encode("utf-8")) + len((encoded or "").encode("utf-8"))
    if size > MAX_ITEM_BYTES:
        raise ValueError(
            f"publish: the item on topic {topic!r} is {size} bytes serialized, over the limit of {MAX_ITEM_BYTES} "
            "bytes per item; publish a reference to large data instead"
        )
    return [topic, encoded, iso_time(when)]


def entry_size(entry: list[Any]) -> int:
    """The bytes an entry adds to a batch."""
    return len(json.dumps(entry, separators=(",", ":")))


def iso_time(when: datetime) -> str:
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when.isoformat(timespec="microseconds")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def orchestrator_batch(execution_id: str, number: int, entries: list[list[Any]]) -> dict[str, Any]:
    """The input of a turn's stream signal: the ``number``-th batch of the orchestrator's execution."""
    return {"s": number, "p": f"o|{execution_id}", "items": entries}


def activity_batch(execution_id: str, task_id: int, run: str, number: int, entries: list[list[Any]]) -> dict[str, Any]:
    """The input of an activity's stream signal; ``run`` tells this attempt apart from the others of the task."""
    return {
        "s": number,
        "p": f"a|{execution_id}|{task_id}|{run}",
        "task": f"{execution_id}|{task_id}",
        "items": entries,
    }


def signal_request_id(instance_id: str, execution_id: str, number: int) -> str:
    """A deterministic request ID for a turn's stream signal (the same on every replay of the turn)."""
    return str(uuid.uuid5(_STREAM_NAMESPACE, f"{instance_id}|{execution_id}|{number}"))
