"""Entity messaging inside one transaction: queueing operations, critical-section locks, and results."""

from __future__ import annotations

import uuid
from datetime import datetime

from dtscale_emulator.engine import events
from dtscale_emulator.engine.actions.base import SendMessage
from dtscale_emulator.engine.delivery import StartOptions, deliver, insert_instance
from dtscale_emulator.errors import InvalidArgumentError
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import EntityRecord, Transaction


def entity_name(entity_id: str) -> str | None:
    """The (lower-case) entity name of an ``@name@key`` ID, or None if the ID is not of that form."""
    if not entity_id.startswith("@"):
        return None
    name, sep, _ = entity_id[1:].partition("@")
    return name.lower() if sep and name else None


def require_entity_id(entity_id: str, field: str = "instanceId") -> None:
    if entity_name(entity_id) is None:
        raise InvalidArgumentError(f"{field} '{entity_id}' is not an entity ID of the form '@name@key'")


def queue_operation(
    tx: Transaction, hub: str, entity_id: str, event: pb.HistoryEvent, visible_at: int, sender: str | None = None
) -> None:
    """Adds an operation to an entity's queue, creating the entity (without state) on first use.

    Args:
        sender: The orchestration that sent it, if one did. While the entity is locked only its lock's owner's
            operations run, its signals too: one it sent before asking for the lock, still queued when the
            lock was granted, must run before the calls it makes inside the critical section.
    """
    if tx.get_entity(hub, entity_id) is None:
        tx.put_entity(EntityRecord(hub, entity_id, None, event.timestamp.ToMicroseconds()))
    called = event.entityOperationCalled.parentInstanceId.value if event.HasField("entityOperationCalled") else None
    tx.add_entity_operation(hub, entity_id, event.SerializeToString(), visible_at, called or sender)


def _visible_at(message: pb.EntityOperationSignaledEvent | pb.EntityOperationCalledEvent, now: datetime) -> int:
    at = events.to_micros(now)
    return max(at, message.scheduledTime.ToMicroseconds()) if message.HasField("scheduledTime") else at


def from_orchestration(
    tx: Transaction, hub: str, sender: str, message: pb.SendEntityMessageAction, now: datetime
) -> None:
    """Applies one entity message an orchestrator sent (signal, call, lock or unlock)."""
    kind = message.WhichOneof("EntityMessageType")
    if kind == "entityOperationSignaled":
        signaled = message.entityOperationSignaled
        event = events.event(now, entityOperationSignaled=signaled)
        queue_operation(tx, hub, signaled.targetInstanceId.value, event, _visible_at(signaled, now), sender)
    elif kind == "entityOperationCalled":
        called = message.entityOperationCalled
        event = events.event(now, entityOperationCalled=called)
        queue_operation(tx, hub, called.targetInstanceId.value, event, _visible_at(called, now), sender)
    elif kind == "entityLockRequested":
        req = message.entityLockRequested
        owner = req.parentInstanceId.value or sender
        tx.add_lock_request(hub, req.criticalSectionId, owner, list(req.lockSet))
        grant_locks(tx, hub, now)
    elif kind == "entityUnlockSent":
        unlock = message.entityUnlockSent
        entity = tx.get_entity(hub, unlock.targetInstanceId.value)
        if entity is not None and entity.locked_by == unlock.criticalSectionId:
            entity.locked_by = entity.lock_owner = None
            tx.put_entity(entity)
            tx.drop_entity_if_empty(hub, entity.instance_id)
        grant_locks(tx, hub, now)


def grant_locks(tx: Transaction, hub: str, now: datetime) -> None:
    """Grants every waiting critical section whose entities are all free (oldest request first)."""
    at = events.to_micros(now)
    for request in tx.lock_requests(hub):
        records = [tx.get_entity(hub, entity_id) for entity_id in request.lock_set]
        if any(r is not None and r.locked_by is not None for r in records):
            continue
        for entity_id, record in zip(request.lock_set, records, strict=True):
            held = record or EntityRecord(hub, entity_id, None, at)
            held.locked_by, held.lock_owner = request.critical_section_id, request.owner
            tx.put_entity(held)
        tx.delete_lock_request(request.id)
        granted = events.event(
            now, entityLockGranted=pb.EntityLockGrantedEvent(criticalSectionId=request.critical_section_id)
        )
        deliver(tx, hub, SendMessage(request.owner, granted), now)


def release_owner(tx: Transaction, hub: str, owner: str, now: datetime) -> bool:
    """A finished orchestration can no longer unlock its entities, so free them for the next waiter.

    Returns whether it held any (only then can other work have become runnable).
    """
    # Waiting requests are granted as soon as their entities are free, so only a freed entity can
    # let one through now.
    if tx.release_locks_of(hub, owner):
        grant_locks(tx, hub, now)
        return True
    return False


def respond(tx: Transaction, hub: str, operation: pb.HistoryEvent, result: pb.OperationResult, now: datetime) -> None:
    """Sends a called operation's result back to the calling orchestration (signals get none)."""
    if not operation.HasField("entityOperationCalled"):
        return
    called = operation.entityOperationCalled
    if result.HasField("failure"):
        failed = pb.EntityOperationFailedEvent(requestId=called.requestId, failureDetails=result.failure.failureDetails)
        event = events.event(now, entityOperationFailed=failed)
    else:
        output = result.success.result if result.success.HasField("result") else None
        event = events.event(
            now, entityOperationCompleted=pb.EntityOperationCompletedEvent(requestId=called.requestId, output=output)
        )
    deliver(tx, hub, SendMessage(called.parentInstanceId.value, event), now)


def run_actions(tx: Transaction, hub: str, actions: list[pb.OperationAction], now: datetime) -> None:
    """Signals to other entities and orchestrations started by an entity's operations."""
    for action in actions:
        if action.HasField("sendSignal"):
            sig = action.sendSignal
            signaled = pb.EntityOperationSignaledEvent(
                requestId=uuid.uuid4().hex,
                operation=sig.name,
                input=sig.input if sig.HasField("input") else None,
                scheduledTime=sig.scheduledTime if sig.HasField("scheduledTime") else None,
                targetInstanceId=events.sv(sig.instanceId),
            )
            event = events.event(now, entityOperationSignaled=signaled)
            queue_operation(tx, hub, sig.instanceId, event, _visible_at(signaled, now))
        elif action.HasField("startNewOrchestration"):
            start = action.startNewOrchestration
            instance_id = start.instanceId or uuid.uuid4().hex
            existing = tx.get_instance(hub, instance_id)
            if existing is not None and existing.status not in events.TERMINAL_STATUSES:
                continue
            if existing is not None:
                tx.delete_instance(hub, instance_id)
            opts = StartOptions(
                instance_id=instance_id,
                name=start.name,
                version=events.opt(start.version, start.HasField("version")),
                input=events.opt(start.input, start.HasField("input")),
                scheduled_start=events.to_datetime(start.scheduledTime) if start.HasField("scheduledTime") else None,
            )
            insert_instance(tx, hub, opts, now, uuid.uuid4().hex)
