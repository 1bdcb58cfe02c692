"""Primitives shared by everything that moves messages between instances inside one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from dtscale_emulator.engine import events
from dtscale_emulator.engine.actions.base import InstanceView, SendMessage
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import InstanceRecord, Transaction


@dataclass(frozen=True)
class StartOptions:
    """Everything StartInstance (and restart) can set on a new instance."""

    instance_id: str
    name: str
    version: str | None = None
    input: str | None = None
    tags: dict[str, str] | None = None
    scheduled_start: datetime | None = None
    replaceable: Sequence[int] | None = None
    execution_id: str | None = None
    trace: pb.TraceContext | None = None


def view(record: InstanceRecord) -> InstanceView:
    return InstanceView(
        instance_id=record.instance_id,
        execution_id=record.execution_id,
        name=record.name,
        version=record.version,
        status=record.status,
        input=record.input,
        tags=record.tags,
        parent_instance_id=record.parent_instance_id,
        parent_execution_id=record.parent_execution_id,
        parent_task_id=record.parent_task_id,
    )


def is_terminal(record: InstanceRecord) -> bool:
    return record.status in events.TERMINAL_STATUSES


def not_started(record: InstanceRecord) -> bool:
    """True while the instance's first work item has not been processed (and none is in flight)."""
    return record.status == pb.ORCHESTRATION_STATUS_PENDING and record.lock_token is None


def message_time(record: InstanceRecord, now: datetime) -> int:
    """When a message sent now may be seen: never before a scheduled instance starts."""
    return max(events.to_micros(now), record.scheduled_start or 0)


def deliver(tx: Transaction, hub: str, message: SendMessage, now: datetime) -> None:
    """Queues an event for another instance; events for unknown or finished instances are dropped."""
    target = tx.get_instance(hub, message.instance_id)
    if target is None or is_terminal(target):
        return
    tx.add_message(hub, target.instance_id, message.event.SerializeToString(), message_time(target, now))


def insert_instance(tx: Transaction, hub: str, opts: StartOptions, now: datetime, new_id: str) -> None:
    """Creates a PENDING instance and queues its executionStarted (at its scheduled start time, if any)."""
    at = events.to_micros(now)
    start = events.to_micros(opts.scheduled_start) if opts.scheduled_start else None
    execution_id = opts.execution_id or new_id
    tags = dict(opts.tags or {})
    tx.put_instance(
        InstanceRecord(
            hub=hub,
            instance_id=opts.instance_id,
            execution_id=execution_id,
            name=opts.name,
            version=opts.version,
            status=pb.ORCHESTRATION_STATUS_PENDING,
            input=opts.input,
            tags=tags,
            created_at=at,
            updated_at=at,
            scheduled_start=start,
        )
    )
    started = events.execution_started(
        now,
        instance_id=opts.instance_id,
        execution_id=execution_id,
        name=opts.name,
        version=opts.version,
        input=opts.input,
        tags=tags,
        scheduled_start=opts.scheduled_start,
        trace=opts.trace,
    )
    tx.add_message(hub, opts.instance_id, started.SerializeToString(), max(at, start or 0))
