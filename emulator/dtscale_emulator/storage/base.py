"""The storage seam: records and the transaction protocol every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

# Timestamps are integer microseconds since the Unix epoch (UTC) so they sort and round-trip exactly.
Micros = int


@dataclass
class InstanceRecord:
    """One orchestration instance (its latest execution) in one task hub."""

    hub: str
    instance_id: str
    execution_id: str
    name: str
    status: int
    created_at: Micros
    updated_at: Micros
    version: str | None = None
    input: str | None = None
    output: str | None = None
    custom_status: str | None = None
    failure: bytes | None = None
    tags: dict[str, str] = field(default_factory=dict)
    completed_at: Micros | None = None
    scheduled_start: Micros | None = None
    parent_instance_id: str | None = None
    parent_execution_id: str | None = None
    parent_task_id: int | None = None
    lock_token: str | None = None
    lock_expires: Micros | None = None
    # The worker's OrchestrationTraceContext (serialized): the execution's span ID and start, returned
    # with each of its work items so every turn parents its spans on the same orchestration span.
    trace_context: bytes | None = None


@dataclass
class ActivityRecord:
    """One activity invocation waiting for (or leased to) a worker."""

    id: int
    hub: str
    instance_id: str
    task_id: int
    name: str
    version: str | None
    request: bytes
    lock_token: str | None = None
    lock_expires: Micros | None = None


@dataclass
class Message:
    """A pending event for an orchestration instance, invisible until ``visible_at``."""

    id: int
    event: bytes
    visible_at: Micros


@dataclass
class EntityRecord:
    """A durable entity: its serialized state (``None`` when it has none) and lock/lease."""

    hub: str
    instance_id: str
    state: str | None
    modified_at: Micros
    locked_by: str | None = None
    lock_owner: str | None = None
    lock_token: str | None = None
    lock_expires: Micros | None = None


@dataclass(frozen=True)
class LockRequest:
    """An orchestration waiting to lock a set of entities (a critical section)."""

    id: int
    critical_section_id: str
    owner: str
    lock_set: list[str]


@dataclass(frozen=True)
class EntityQueryArgs:
    id_prefix: str | None = None
    modified_from: Micros | None = None
    modified_to: Micros | None = None
    include_transient: bool = False
    after_id: str | None = None
    limit: int = 100


@dataclass(frozen=True)
class NameFilter:
    """Names (and optionally versions) a worker accepts; ``None`` accepts everything."""

    versions_by_name: dict[str, frozenset[str]] | None = None

    def accepts(self, name: str, version: str | None) -> bool:
        if self.versions_by_name is None:
            return True
        versions = self.versions_by_name.get(name)
        if versions is None:
            return False
        return not versions or (version or "") in versions

    def names(self) -> Sequence[str] | None:
        return None if self.versions_by_name is None else sorted(self.versions_by_name)


@dataclass(frozen=True)
class InstanceQueryArgs:
    """Filters and paging for instance queries."""

    statuses: Sequence[int] = ()
    created_from: Micros | None = None
    created_to: Micros | None = None
    completed_from: Micros | None = None
    completed_to: Micros | None = None
    id_prefix: str | None = None
    after_id: str | None = None
    limit: int = 100
    terminal_only: bool = False


class Transaction(Protocol):
    """Primitive reads and writes; everything done through one transaction commits atomically."""

    def ensure_hub(self, hub: str) -> None: ...
    def hub_exists(self, hub: str) -> bool: ...
    def hub_count(self) -> int: ...
    def delete_hub(self, hub: str) -> None: ...
    def delete_hub_rows(self, hub: str, limit: int) -> int:
        """Deletes up to about ``limit`` rows of the hub's data (the name stays); 0 once none are left."""
        ...

    def get_instance(self, hub: str, instance_id: str) -> InstanceRecord | None: ...
    def put_instance(self, record: InstanceRecord) -> None: ...
    def delete_instance(self, hub: str, instance_id: str) -> None: ...
    def child_ids(self, hub: str, parent_id: str) -> list[str]: ...
    def delete_finished(self, hub: str, instance_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Deletes the finished ones among ``instance_ids``; returns their IDs and their children's IDs."""
        ...

    def instance_ids(self, hub: str, args: InstanceQueryArgs) -> list[str]:
        """The IDs of the page :meth:`query_instances` would return, without reading the instances."""
        ...

    def instance_keys_by_age(
        self, hub: str, args: InstanceQueryArgs, after: tuple[int, int, str] | None
    ) -> list[tuple[int, int, str]]:
        """(created_at, status, instance_id) of the instances matching ``args``'s created range and statuses, in
        that order, after ``after``; ``args``'s ID filters are not applied."""
        ...

    def query_instances(self, hub: str, args: InstanceQueryArgs) -> list[InstanceRecord]: ...

    def history(self, hub: str, instance_id: str) -> list[bytes]: ...
    def history_length(self, hub: str, instance_id: str) -> int: ...
    def append_history(self, hub: str, instance_id: str, events: Sequence[bytes], length: int | None = None) -> None:
        """Appends to the history of a stored instance (LookupError when there is none)."""
        ...

    def clear_history(self, hub: str, instance_id: str) -> None: ...

    def add_message(self, hub: str, instance_id: str, event: bytes, visible_at: Micros) -> int: ...
    def visible_messages(self, hub: str, instance_id: str, now: Micros) -> list[Message]: ...
    def has_visible_messages(self, hub: str, instance_id: str, now: Micros) -> bool: ...
    def delete_messages(self, ids: Sequence[int]) -> None: ...
    def delete_instance_messages(self, hub: str, instance_id: str) -> None: ...
    def ready_instances(
        self, hub: str, now: Micros, accept: NameFilter, limit: int
    ) -> tuple[list[tuple[str, str, str | None]], bool]:
        """Up to ``limit`` runnable instances ``accept`` takes, and whether that page holds every one there is."""
        ...

    def next_message_time(self, hub: str, after: Micros) -> Micros | None: ...

    def lock_instance(self, hub: str, instance_id: str, token: str | None, expires: Micros | None) -> None: ...

    def add_activity(
        self, hub: str, instance_id: str, task_id: int, name: str, version: str | None, request: bytes
    ) -> int: ...
    def get_activity(self, activity_id: int) -> ActivityRecord | None: ...
    def ready_activities(self, hub: str, now: Micros, accept: NameFilter, limit: int) -> list[ActivityRecord]:
        """The oldest ``limit`` unleased activities ``accept`` takes."""
        ...

    def lock_activity(self, activity_id: int, token: str | None, expires: Micros | None) -> None: ...
    def delete_activity(self, activity_id: int) -> None: ...
    def delete_instance_activities(self, hub: str, instance_id: str, only_idle: bool = False) -> None: ...
    def next_lease_expiry(self, hub: str, after: Micros = -1) -> Micros | None: ...

    def get_entity(self, hub: str, entity_id: str) -> EntityRecord | None: ...
    def put_entity(self, record: EntityRecord) -> None: ...
    def delete_entity(self, hub: str, entity_id: str) -> None: ...
    def drop_entity_if_empty(self, hub: str, entity_id: str) -> bool:
        """Deletes the entity if it has no state, no lock, no lease and no queued operation; True if it did."""
        ...

    def lock_entity(self, hub: str, entity_id: str, token: str | None, expires: Micros | None) -> None: ...
    def add_entity_operation(
        self, hub: str, entity_id: str, event: bytes, visible_at: Micros, caller: str | None
    ) -> int: ...
    def entity_operations(
        self, hub: str, entity_id: str, now: Micros, limit: int, caller: str | None = None
    ) -> list[Message]: ...
    def ready_entities(
        self, hub: str, now: Micros, limit: int, names: Sequence[str] | None = None
    ) -> list[EntityRecord]: ...
    def backlog(self, hub: str, entity_id: str) -> int: ...
    def query_entities(self, hub: str, args: EntityQueryArgs) -> list[EntityRecord]: ...
    def add_lock_request(self, hub: str, critical_section_id: str, owner: str, lock_set: Sequence[str]) -> None: ...
    def lock_requests(self, hub: str) -> list[LockRequest]: ...
    def delete_lock_request(self, request_id: int) -> None: ...
    def release_locks_of(self, hub: str, owner: str) -> int: ...


class Backend(Protocol):
    """A durable store of task hubs, instances, histories, messages and activity queues."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """Opens a write transaction; it commits when the block exits normally and rolls back on error."""
        ...

    def release_all_leases(
        self, keep_until: Micros | None = None, now: Micros = 0
    ) -> list[ActivityRecord | EntityRecord]:
        """Forgets every lease; called at startup because no worker stream survives a restart.

        With ``keep_until``, an activity's or entity's lease still live at ``now`` keeps its token, and expires
        at ``keep_until`` at the latest: its worker may still deliver the result. Returns those rows.
        """
        ...

    def read_instance(self, hub: str, instance_id: str) -> InstanceRecord | None:
        """One instance, read on its own; the answer that shows it waits only for changes to it not yet on disk."""
        ...

    def reset(self) -> None:
        """Deletes all data in every task hub (task hub names are kept)."""
        ...

    def checkpoint(self) -> None:
        """Moves committed changes out of any write-ahead log, without blocking other transactions (or nothing)."""
        ...

    async def durable(self, made: int, seen: int = 0) -> None:
        """Returns once commit ``made`` and every commit up to ``seen`` are on disk (at once if they are, or if the
        store syncs inside each commit). Raises ``StorageError`` if the sync of ``made`` failed."""
        ...

    async def room(self) -> None:
        """Waits while the commits not yet on disk hold more bytes than the store lets wait for a sync."""
        ...

    @property
    def last_commit(self) -> int:
        """The newest commit a later :meth:`durable` can wait for (0 when there is nothing to wait for)."""
        ...

    def close(self) -> None: ...
