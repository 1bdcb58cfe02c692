"""Durable entity operations as storage transactions: signals, work items, results, queries, cleanup."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from dtscale_emulator.engine import entity_ops, events, work_size
from dtscale_emulator.engine.changes import ChangeFeed, ChangeSubscriber
from dtscale_emulator.errors import stale_token
from dtscale_emulator.ops.clock import Clock
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import Backend, EntityQueryArgs, EntityRecord, NameFilter

#: The ready query only returns entities with an operation they may run now, so the first usually serves.
_CANDIDATES = 8
_MAX_BATCH = 100


@dataclass(frozen=True)
class EntityWork:
    entity_id: str
    message_ids: list[int]
    operations: list[pb.HistoryEvent]
    request: pb.EntityRequest


@dataclass(frozen=True)
class EntityView:
    record: EntityRecord
    backlog: int


class Entities:
    """Entity state and queues; reports every committed change to ``changes``."""

    def __init__(self, backend: Backend, clock: Clock, changes: ChangeSubscriber | None = None) -> None:
        self.backend = backend
        self.clock = clock
        self.changes: ChangeSubscriber = changes if changes is not None else ChangeFeed()
        self._state_listeners: tuple[Callable[[str, str], None], ...] = ()

    def on_state_change(self, listener: Callable[[str, str], None]) -> None:
        """Calls ``listener(hub, entity_id)`` after each commit of an entity's state (must not block)."""
        self._state_listeners = (*self._state_listeners, listener)

    def signal(
        self, hub: str, entity_id: str, operation: str, data: str | None, request_id: str, at: datetime | None
    ) -> None:
        now = self.clock.now()
        signaled = pb.EntityOperationSignaledEvent(
            requestId=request_id or uuid.uuid4().hex,
            operation=operation,
            input=events.sv(data),
            targetInstanceId=events.sv(entity_id),
        )
        if at is not None:
            signaled.scheduledTime.CopyFrom(events.ts(at))
        visible = max(events.to_micros(now), events.to_micros(at) if at else 0)
        with self.backend.transaction() as tx:
            entity_ops.queue_operation(tx, hub, entity_id, events.event(now, entityOperationSignaled=signaled), visible)
        if visible > events.to_micros(now):
            self.changes.work_changed(hub)  # a scheduled signal: timed work
        else:
            # Entity work only; its name is left unsaid, as streams' entity filters match names their own way.
            self.changes.work_changed(hub, ("entity",))

    def get(self, hub: str, entity_id: str) -> EntityView | None:
        with self.backend.transaction() as tx:
            record = tx.get_entity(hub, entity_id)
            if record is None or record.state is None:
                return None
            return EntityView(record, tx.backlog(hub, entity_id))

    def query(self, hub: str, args: EntityQueryArgs) -> list[EntityView]:
        with self.backend.transaction() as tx:
            return [EntityView(r, tx.backlog(hub, r.instance_id)) for r in tx.query_entities(hub, args)]

    def clean(
        self, hub: str, remove_empty: bool, release_orphaned: bool, after: str | None, limit: int
    ) -> tuple[int, int, str | None]:
        """Deletes stateless idle entities and frees locks whose owner has finished or vanished.

        Works through at most ``limit`` entities after ``after`` in one transaction; returns the counts and the
        entity to continue after (``None`` when none are left).
        """
        removed = released = 0
        now = self.clock.now()
        with self.backend.transaction() as tx:
            page = tx.query_entities(hub, EntityQueryArgs(include_transient=True, after_id=after, limit=limit + 1))
            for record in page[:limit]:
                if release_orphaned and record.lock_owner is not None:
                    owner = tx.get_instance(hub, record.lock_owner)
                    if owner is None or owner.status in events.TERMINAL_STATUSES:
                        record.locked_by = record.lock_owner = None
                        tx.put_entity(record)
                        released += 1
                idle = record.locked_by is None and record.lock_token is None
                if remove_empty and record.state is None and idle and tx.backlog(hub, record.instance_id) == 0:
                    tx.delete_entity(hub, record.instance_id)
                    removed += 1
            if released:
                entity_ops.grant_locks(tx, hub, now)
        self.changes.work_changed(hub)
        return removed, released, page[limit - 1].instance_id if len(page) > limit else None

    def fetch(self, hub: str, accept: NameFilter, token: str, expires: datetime) -> EntityWork | None:
        at = events.to_micros(self.clock.now())
        with self.backend.transaction() as tx:
            for entity in tx.ready_entities(hub, at, _CANDIDATES, accept.names()):
                if not accept.accepts(entity_ops.entity_name(entity.instance_id) or "", None):
                    continue
                if entity.locked_by is not None and entity.lock_owner is None:
                    continue  # locked for nobody in particular: nothing may run until the unlock
                # While locked, the entity only runs operations called by the orchestration holding the lock.
                owner = entity.lock_owner if entity.locked_by is not None else None
                batch = tx.entity_operations(hub, entity.instance_id, at, _MAX_BATCH, owner)
                # No larger than an entity worker receives, with the state it is sent beside the operations.
                state_bytes = len((entity.state or "").encode("utf-8"))
                batch = work_size.taken_within(batch, work_size.WORK_ITEM_BYTES - work_size.ITEM_OVERHEAD - state_bytes)
                if not batch:
                    continue
                tx.lock_entity(hub, entity.instance_id, token, events.to_micros(expires))
                operations = [pb.HistoryEvent.FromString(m.event) for m in batch]
                request = pb.EntityRequest(
                    instanceId=entity.instance_id, entityState=events.sv(entity.state), operationRequests=operations
                )
                return EntityWork(entity.instance_id, [m.id for m in batch], operations, request)
        return None

    def complete(self, hub: str, work: EntityWork, token: str, result: pb.EntityBatchResult) -> None:
        """Stores the new state, answers callers and runs the batch's actions, all in one transaction."""
        now = self.clock.now()
        with self.backend.transaction() as tx:
            entity = tx.get_entity(hub, work.entity_id)
            if entity is None or entity.lock_token != token:
                raise stale_token(token)
            # Operations without a result (a batch cut short) stay queued for the next batch.
            done = min(len(result.results), len(work.operations))
            tx.delete_messages(work.message_ids[:done])
            for operation, outcome in zip(work.operations[:done], result.results[:done], strict=True):
                entity_ops.respond(tx, hub, operation, outcome, now)
            if done or not result.HasField("failureDetails"):
                entity.state = result.entityState.value if result.HasField("entityState") else None
            entity.modified_at = events.to_micros(now)
            entity.lock_token = entity.lock_expires = None
            tx.put_entity(entity)
            tx.drop_entity_if_empty(hub, work.entity_id)  # its state was deleted and nothing else waits for it
            entity_ops.run_actions(tx, hub, list(result.actions), now)
        for listener in self._state_listeners:
            listener(hub, work.entity_id)
        self.changes.work_changed(hub)
