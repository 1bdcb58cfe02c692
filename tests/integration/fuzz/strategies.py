"""Hypothesis strategies that build any protobuf message from its descriptor, favouring edge-case values."""

from __future__ import annotations

from typing import Any

from google.protobuf import message as pb_message
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message_factory import GetMessageClass
from hypothesis import strategies as st

# Values that have broken servers before: empty, huge, reserved prefixes, separators, non-ASCII, NUL.
EDGE_STRINGS = st.sampled_from(
    ["", " ", "@", "@counter@k", "@@", "default", "a" * 101, "a" * 5000, "é", "\x00", "\n", "..", "/", "null", "{"]
)
STRINGS = st.one_of(EDGE_STRINGS, st.text(max_size=40))
INT32 = st.one_of(st.sampled_from([0, -1, 1, 2**31 - 1, -(2**31)]), st.integers(-(2**31), 2**31 - 1))
INT64 = st.one_of(st.sampled_from([0, -1, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))
UINT32 = st.integers(0, 2**32 - 1)
UINT64 = st.integers(0, 2**64 - 1)
_SCALARS: dict[int, st.SearchStrategy[Any]] = {
    FieldDescriptor.TYPE_STRING: STRINGS,
    FieldDescriptor.TYPE_BYTES: st.binary(max_size=40),
    FieldDescriptor.TYPE_BOOL: st.booleans(),
    FieldDescriptor.TYPE_INT32: INT32,
    FieldDescriptor.TYPE_SINT32: INT32,
    FieldDescriptor.TYPE_SFIXED32: INT32,
    FieldDescriptor.TYPE_INT64: INT64,
    FieldDescriptor.TYPE_SINT64: INT64,
    FieldDescriptor.TYPE_SFIXED64: INT64,
    FieldDescriptor.TYPE_UINT32: UINT32,
    FieldDescriptor.TYPE_FIXED32: UINT32,
    FieldDescriptor.TYPE_UINT64: UINT64,
    FieldDescriptor.TYPE_FIXED64: UINT64,
    FieldDescriptor.TYPE_DOUBLE: st.floats(allow_nan=True),
    FieldDescriptor.TYPE_FLOAT: st.floats(width=32, allow_nan=True),
}
Overrides = dict[str, st.SearchStrategy[Any]]
# The ends of the range a Timestamp holds (0001..9999), and just past them: the emulator must refuse the latter
# with INVALID_ARGUMENT naming the field, never fail converting them.
_TIMESTAMP_SECONDS = st.sampled_from([-62135596800, 0, 1, 253402300799, 253402300800, -62135596801, 2**62])
_TIMESTAMP_NANOS = st.one_of(st.integers(0, 999_999_999), st.sampled_from([-1, 1_000_000_000]))


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        known = [v.number for v in field.enum_type.values]
        return st.one_of(st.sampled_from(known), st.integers(-5, 50))
    return _SCALARS[field.type]


def _value(field: FieldDescriptor, depth: int, named: Overrides) -> st.SearchStrategy[Any]:
    if field.name in named and field.type != FieldDescriptor.TYPE_MESSAGE:
        return st.one_of(named[field.name], _scalar(field))
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return messages(field.message_type, depth + 1, named)
    return _scalar(field)


def _is_repeated(field: FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def messages(descriptor: Any, depth: int = 0, named: Overrides | None = None) -> st.SearchStrategy[pb_message.Message]:
    """Messages of ``descriptor``'s type with a random subset of fields set (nesting stops at depth 3).

    ``named`` mixes extra values into scalar fields of that name (e.g. IDs of instances that exist),
    so the fuzzer reaches code paths past the first "not found".
    """
    named = named or {}
    cls = GetMessageClass(descriptor)
    if descriptor.full_name == "google.protobuf.Timestamp":
        return st.builds(lambda s, n: cls(seconds=s, nanos=n), _TIMESTAMP_SECONDS, _TIMESTAMP_NANOS)
    if depth >= 3:
        return st.just(cls())
    fields = [f for f in descriptor.fields if not (f.message_type and f.message_type.GetOptions().map_entry)]
    maps = [f for f in descriptor.fields if f.message_type and f.message_type.GetOptions().map_entry]

    @st.composite
    def build(draw: st.DrawFn) -> pb_message.Message:
        msg = cls()
        for field in draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields))) if fields else []:
            if _is_repeated(field):
                getattr(msg, field.name).extend(draw(st.lists(_value(field, depth, named), max_size=3)))
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                getattr(msg, field.name).CopyFrom(draw(_value(field, depth, named)))
            else:
                setattr(msg, field.name, draw(_value(field, depth, named)))
        for field in maps:
            key_field, value_field = (
                field.message_type.fields_by_name["key"],
                field.message_type.fields_by_name["value"],
            )
            entries = draw(st.dictionaries(_scalar(key_field), _value(value_field, depth, named), max_size=2))
            for key, value in entries.items():
                if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                    getattr(msg, field.name)[key].CopyFrom(value)
                else:
                    getattr(msg, field.name)[key] = value
        return msg

    return build()


# Values past the emulator's request limits ----------------------------------------------------------------
#: Each kind of limited field: values just past its limit, and the text the refusal must hold about the limit.
OverLimit = tuple[Any, str]


def _longer(limit: int) -> st.SearchStrategy[OverLimit]:
    chars = st.sampled_from(["n", "é", "\x00", " "])
    return st.builds(lambda c, n: (c * n, f"the limit is {limit}"), chars, st.integers(limit + 1, limit * 4))


def _tags() -> st.SearchStrategy[OverLimit]:
    too_many = st.integers(65, 200).map(lambda n: ({f"k{i}": "v" for i in range(n)}, "the limit is 64"))
    long_key = st.integers(257, 1000).map(lambda n: ({"k" * n: "v"}, "the limit is 256"))
    long_value = st.integers(4097, 10_000).map(lambda n: ({"k": "v" * n}, "the limit is 4096"))
    too_big = st.integers(17, 40).map(lambda n: ({f"k{i:02}": "v" * 4000 for i in range(n)}, "the limit is 65536"))
    return st.one_of(too_many, long_key, long_value, too_big)


def _timestamps() -> st.SearchStrategy[OverLimit]:
    seconds = st.one_of(st.integers(253402300800, 2**62), st.integers(-(2**62), -62135596801))
    outside = st.builds(lambda s: (s, 0), seconds)
    bad_nanos = st.builds(lambda n: (0, n), st.one_of(st.integers(-(2**31), -1), st.integers(10**9, 2**31 - 1)))
    return st.one_of(outside, bad_nanos).map(lambda sn: (sn, "is out of range"))


#: By kind of field: names (1024), versions (256), execution and request IDs (256), instance IDs (100), trace
#: context fields (1024), tag sets, Timestamps.
OVER_LIMIT: dict[str, st.SearchStrategy[OverLimit]] = {
    "name": _longer(1024),
    "version": _longer(256),
    "key": _longer(256),
    "instance_id": _longer(100),
    "trace": _longer(1024),
    "tags": _tags(),
    "timestamp": _timestamps(),
}


def set_path(message: pb_message.Message, path: str, value: Any) -> None:
    """Sets the field at a dotted ``path`` of ``message``: a string, a wrapped string, a map, or a Timestamp
    (given as ``(seconds, nanos)``)."""
    *parents, name = path.split(".")
    for part in parents:
        message = getattr(message, part)
    field = message.DESCRIPTOR.fields_by_name[name]
    if field.message_type is None:
        setattr(message, name, value)
    elif field.message_type.GetOptions().map_entry:
        getattr(message, name).update(value)
    elif field.message_type.full_name == "google.protobuf.Timestamp":
        getattr(message, name).seconds, getattr(message, name).nanos = value
    else:
        getattr(message, name).value = value
