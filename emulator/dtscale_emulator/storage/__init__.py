"""Durable storage for the emulator: the ``Backend`` seam and its SQLite implementation."""

from dtscale_emulator.storage.base import (
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
from dtscale_emulator.storage.sqlite import SqliteBackend

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
