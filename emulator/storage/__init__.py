"""Durable storage for the emulator: the ``Backend`` seam and its SQLite implementation."""

from emulator.storage.base import (
    ActivityRecord,
    Backend,
    EntityQueryArgs,
    EntityRecord,
    InstanceQueryArgs,
    InstanceRecord,
    LockRequest,
    Message,
    NameFilter,
    Transaction,
)
from emulator.storage.sqlite import SqliteBackend

__all__ = [
    "ActivityRecord",
    "Backend",
    "EntityQueryArgs",
    "EntityRecord",
    "InstanceQueryArgs",
    "InstanceRecord",
    "LockRequest",
    "Message",
    "NameFilter",
    "SqliteBackend",
    "Transaction",
]
