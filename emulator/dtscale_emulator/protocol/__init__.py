"""The DTS wire protocol as the emulator's own generated classes, in a descriptor pool of its own.

Microsoft's SDK (and any other package carrying ``orchestrator_service.proto``) registers the same file and
symbols in protobuf's default pool, and two different copies there fail with "duplicate symbol". Ours, with
the well-known types it uses, is built in a private pool, so the emulator runs in one process with any SDK.
Well-known-type messages must then come from here too (``Timestamp``, ``StringValue``...): a default-pool
``Timestamp`` cannot be assigned to a field of one of these messages.
"""

from __future__ import annotations

from dtscale_emulator.protocol import orchestrator_service_pb2 as pb
from dtscale_emulator.protocol import orchestrator_service_pb2_grpc as pb_grpc
from dtscale_emulator.protocol._pool import POOL, BoolValue, Empty, Int32Value, StringValue, Timestamp, Value

__all__ = ["POOL", "BoolValue", "Empty", "Int32Value", "StringValue", "Timestamp", "Value", "pb", "pb_grpc"]
