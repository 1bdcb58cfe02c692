"""Durable storage for the emulator: the ``Backend`` seam and its SQLite implementation."""

from emulator.storage.base import (
    ActivityRecord,
    Backend,
    InstanceQueryArgs,
    InstanceRecord,
    Message,
    NameFilter,
    Transaction,
)
from emulator.storage.sqlite import SqliteBackend

__all__ = [
    "ActivityRecord",
    "Backend",
    "InstanceQueryArgs",
    "InstanceRecord",
    "Message",
    "NameFilter",
    "SqliteBackend",
    "Transaction",
]
