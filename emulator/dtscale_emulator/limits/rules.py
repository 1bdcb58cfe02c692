"""Field limits of requests: sizes of names, versions, tags, IDs, payloads, failures, and Timestamp ranges.

Every check raises an :class:`InvalidArgumentError` subclass naming the field and the limit. The subclasses
are :class:`RefusedContentError`s too: in a completion they fail the work that sent them (redelivered, it
would send the same again), in a client call they are the call's INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from dtscale_emulator.errors import InvalidArgumentError

MIB = 1024 * 1024
KIB = 1024

#: The range a google.protobuf.Timestamp may hold: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z.
MIN_TIMESTAMP_SECONDS = -62_135_596_800
MAX_TIMESTAMP_SECONDS = 253_402_300_799
MAX_NANOS = 999_999_999


class RefusedContentError(InvalidArgumentError):
    """A completion carries what the emulator cannot store: it fails its work instead of coming back.

    Redelivered, the same work would produce the same refused completion again, forever.
    """

    #: ``errorType`` of the failure recorded in place of the refused completion.
    failure_type = "InvalidArgument"


class PayloadTooLargeError(RefusedContentError):
    """A payload is over the size limit."""

    failure_type = "PayloadTooLarge"


class EntityIdTooLongError(RefusedContentError):
    """An entity ID (``@name@key``) is over the instance ID length limit."""

    failure_type = "EntityIdTooLong"


class FieldTooLargeError(RefusedContentError):
    """A name, version, ID, tag set, trace context or failure is over its limit."""

    failure_type = "FieldTooLarge"


class TimestampOutOfRangeError(RefusedContentError):
    """A Timestamp lies outside the range a Timestamp may hold, or has nanos outside 0..999999999."""

    failure_type = "TimestampOutOfRange"


class TooManyActionsError(RefusedContentError):
    """One orchestrator turn carries more actions than a turn may."""

    failure_type = "TooManyActions"


def timestamp(field: str, seconds: int, nanos: int) -> None:
    """Refuses a Timestamp outside 0001-01-01..9999-12-31 (the range protobuf defines) or with bad nanos."""
    if not (MIN_TIMESTAMP_SECONDS <= seconds <= MAX_TIMESTAMP_SECONDS and 0 <= nanos <= MAX_NANOS):
        raise TimestampOutOfRangeError(
            f"{field} is out of range (seconds={seconds}, nanos={nanos}): a Timestamp lies between "
            "0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z (seconds -62135596800..253402300799) "
            "with nanos 0..999999999"
        )


# How the walk below treats a field, by the field's name (message types are matched first).
_NAME_FIELDS = frozenset({"name", "operation"})
_VERSION_FIELDS = frozenset({"version", "newVersion"})
_ID_FIELDS = frozenset(
    {"instanceId", "targetInstanceId", "parentInstanceId", "instanceIdPrefix", "instanceIdStartsWith"}
)
_KEY_FIELDS = frozenset({"executionId", "parentExecutionId", "requestId", "criticalSectionId"})
_PAYLOAD_FIELDS = frozenset({"input", "result", "data", "output", "reason", "customStatus", "entityState", "details"})
_TRACE_FIELDS = frozenset({"traceParent", "spanID", "traceState"})
_TIMESTAMP = "google.protobuf.Timestamp"
_STRING_VALUE = "google.protobuf.StringValue"
_FAILURE_TYPE = "TaskFailureDetails"


@dataclass(frozen=True)
class FieldLimits:
    """The per-field limits; payloads and IDs match the managed service's documented limits, the rest are ours."""

    max_payload_bytes: int = MIB
    max_instance_id_length: int = 100
    #: Orchestration, activity, entity operation and event names (characters).
    max_name_length: int = 1024
    max_version_length: int = 256
    #: Execution, request and critical-section IDs (SDKs send GUIDs: 32 to 38 characters).
    max_key_length: int = 256
    max_tags: int = 64
    max_tag_key_length: int = 256
    max_tag_value_length: int = 4096
    #: All keys and values of one tag set, UTF-8.
    max_tags_bytes: int = 64 * KIB
    #: traceParent, spanID and traceState, each (W3C: a traceparent is 55 characters, a tracestate at most 512).
    max_trace_field_length: int = 1024
    #: A TaskFailureDetails as serialized, with its inner failures and stack traces.
    max_failure_bytes: int = 256 * KIB
    #: Instance IDs one purge or forced termination names (all are handled in one transaction).
    max_batch_ids: int = 1000

    def instance_id(self, value: str, field: str = "instanceId") -> None:
        """Rejects IDs that are too long, non-printable-ASCII or start with '@' (reserved for entities)."""
        self.id_length(value, field)
        if not all(" " <= ch <= "~" for ch in value):
            raise InvalidArgumentError(f"{field} must contain only printable ASCII characters")
        if value.startswith("@"):
            raise InvalidArgumentError(f"{field} must not start with '@' (reserved for entity IDs)")

    def id_length(self, value: str, field: str = "instanceId") -> None:
        """Rejects an instance or entity ID over the length limit (no such instance can exist)."""
        if len(value) > self.max_instance_id_length:
            if value.startswith("@"):
                self.entity_id(value, field)
            raise FieldTooLargeError(f"{field} is {len(value)} characters; the limit is {self.max_instance_id_length}")

    def entity_id(self, value: str, field: str = "instanceId") -> None:
        """Rejects entity IDs over the limit: DTS applies the instance ID limit to ``@name@key`` as a whole."""
        if len(value) > self.max_instance_id_length:
            raise EntityIdTooLongError(
                f"{field} is {len(value)} characters; the limit is {self.max_instance_id_length} "
                "(for an entity, '@name@key' as a whole)"
            )

    def payload(self, field: str, value: str | None) -> None:
        if value is None:
            return
        size = len(value.encode("utf-8"))
        if size > self.max_payload_bytes:
            raise PayloadTooLargeError(
                f"{field} is {size} bytes; the limit is {self.max_payload_bytes} bytes (larger payloads: give the "
                "client and worker a payload_store=, which stores them externally and sends a token)"
            )

    def text(self, field: str, value: str, limit: int) -> None:
        if len(value) > limit:
            raise FieldTooLargeError(f"{field} is {len(value)} characters; the limit is {limit}")

    def tags(self, field: str, tags: Mapping[str, str]) -> None:
        if len(tags) > self.max_tags:
            raise FieldTooLargeError(f"{field} has {len(tags)} entries; the limit is {self.max_tags}")
        total = 0
        for key, value in tags.items():
            if len(key) > self.max_tag_key_length:
                raise FieldTooLargeError(
                    f"{field} has a key of {len(key)} characters ('{key[:32]}...'); the limit is "
                    f"{self.max_tag_key_length}"
                )
            if len(value) > self.max_tag_value_length:
                raise FieldTooLargeError(
                    f"{field}['{key}'] is {len(value)} characters; the limit is {self.max_tag_value_length}"
                )
            total += len(key.encode("utf-8")) + len(value.encode("utf-8"))
        if total > self.max_tags_bytes:
            raise FieldTooLargeError(
                f"{field} is {total} bytes (keys and values, UTF-8); the limit is {self.max_tags_bytes} bytes"
            )

    def _batch(self, field: str, ids: Sequence[str]) -> None:
        if len(ids) > self.max_batch_ids:
            raise FieldTooLargeError(f"{field} holds {len(ids)} IDs; the limit is {self.max_batch_ids}")
        for index, instance_id in enumerate(ids):
            self.id_length(instance_id, f"{field}[{index}]")

    def failure(self, field: str, details: Message) -> None:
        size = details.ByteSize()
        if size > self.max_failure_bytes:
            raise FieldTooLargeError(
                f"{field} is {size} bytes serialized (with its stack traces and inner failures); the limit is "
                f"{self.max_failure_bytes} bytes"
            )

    def message(self, message: Message, path: str = "") -> None:
        """Checks every field of ``message`` (and of the messages inside it) that a limit applies to.

        Fields are matched by name: ``name`` is a name wherever it appears, ``input`` a payload, every
        Timestamp is range-checked. Fields no limit names are left alone.
        """
        for field, value in message.ListFields():
            plan = _PLANS.get(field)
            if plan is None:
                plan = _PLANS[field] = _plan(field)
            if plan == _SKIP:
                continue
            where = f"{path}.{field.name}" if path else field.name
            if plan == _TEXT:
                self._text(field.name, value, where)
            elif plan == _WRAPPED:
                self._text(field.name, value.value, where)
            elif plan == _STAMP:
                timestamp(where, value.seconds, value.nanos)
            elif plan == _FAILURE:
                self.failure(where, value)
            elif plan == _TAGS:
                self.tags(where, value)
            elif plan == _EACH:
                for index, item in enumerate(value):
                    self.message(item, f"{where}[{index}]")
            else:
                self.message(value, where)

    def _text(self, name: str, value: Any, where: str) -> None:
        if name == "lockSet":
            for index, entity in enumerate(value):
                self.entity_id(entity, f"{where}[{index}]")
        elif name == "instanceIds":
            self._batch(where, value)
        elif name in _PAYLOAD_FIELDS:
            self.payload(where, value)
        elif name in _NAME_FIELDS:
            self.text(where, value, self.max_name_length)
        elif name in _VERSION_FIELDS:
            self.text(where, value, self.max_version_length)
        elif name in _ID_FIELDS:
            self.id_length(value, where)
        elif name in _KEY_FIELDS:
            self.text(where, value, self.max_key_length)
        elif name in _TRACE_FIELDS:
            self.text(where, value, self.max_trace_field_length)


# What the walk does with a field, decided once per field descriptor: skip it, check its text (a string, a
# wrapped string, a list of IDs), range-check a Timestamp, size a failure or a tag set, or walk into it.
_SKIP, _TEXT, _WRAPPED, _STAMP, _FAILURE, _TAGS, _EACH, _INTO = range(8)
_LIMITED = _NAME_FIELDS | _VERSION_FIELDS | _ID_FIELDS | _KEY_FIELDS | _PAYLOAD_FIELDS | _TRACE_FIELDS
_PLANS: dict[FieldDescriptor, int] = {}


def _plan(field: FieldDescriptor) -> int:
    kind = field.message_type
    if kind is None:
        return _TEXT if field.name in _LIMITED or field.name in ("lockSet", "instanceIds") else _SKIP
    if kind.GetOptions().map_entry:
        return _TAGS if field.name == "tags" else _SKIP
    if field.is_repeated:
        return _EACH
    if kind.full_name == _TIMESTAMP:
        return _STAMP
    if kind.full_name == _STRING_VALUE:
        return _WRAPPED if field.name in _LIMITED else _SKIP
    return _FAILURE if kind.name == _FAILURE_TYPE else _INTO
