"""The emulator's private descriptor pool and the well-known message types built in it."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from google.protobuf import (
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)

if TYPE_CHECKING:
    from google.protobuf.message import Message

POOL = descriptor_pool.DescriptorPool()
for _module in (timestamp_pb2, duration_pb2, wrappers_pb2, empty_pb2, struct_pb2):
    POOL.AddSerializedFile(_module.DESCRIPTOR.serialized_pb)


def _message(full_name: str) -> type[Message]:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


# Typed as the default pool's classes: the same API, though not the same classes at run time.
Timestamp = cast("type[timestamp_pb2.Timestamp]", _message("google.protobuf.Timestamp"))
StringValue = cast("type[wrappers_pb2.StringValue]", _message("google.protobuf.StringValue"))
BoolValue = cast("type[wrappers_pb2.BoolValue]", _message("google.protobuf.BoolValue"))
Int32Value = cast("type[wrappers_pb2.Int32Value]", _message("google.protobuf.Int32Value"))
Empty = cast("type[empty_pb2.Empty]", _message("google.protobuf.Empty"))
Value = cast("type[struct_pb2.Value]", _message("google.protobuf.Value"))
