"""Primitives shared by everything that moves messages between instances inside one transaction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from dtscale_emulator.engine import events
from dtscale_emulator.engine.actions.base import ContinueAsNew, InstanceView, SendMessage
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import InstanceRecord, Message, Transaction

#: Queued event kinds addressed to the instance rather than to one execution: a continue-as-new keeps them.
_FOR_THE_INSTANCE = frozenset(("eventRaised", "executionTerminated"))


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


def inbox(messages: Sequence[Message]) -> tuple[list[int], list[pb.HistoryEvent]]:
    """The queued messages a work item takes, and their events: executionStarted first, and a suspend alone.

    Both SDKs set aside the events that follow a suspend in one work item, and forget them if that turn
    continues as new; left queued, they reach the suspended orchestration in its next work item. Events before
    a suspend go in a work item of their own too: what the turn schedules on them is recorded after the turn's
    events, so it would follow the suspend, and Microsoft's worker, replaying, sets such a record aside with
    the events and schedules the same call again.
    """
    # A started execution must see its executionStarted before events that arrived earlier.
    parsed = [pb.HistoryEvent.FromString(m.event) for m in messages]
    taken = sorted(zip(messages, parsed, strict=True), key=_started_first)
    for i, (_, event) in enumerate(taken):
        if event.HasField("executionSuspended"):
            taken = taken[: max(i, 1)]
            break
    return [m.id for m, _ in taken], [e for _, e in taken]


def _started_first(taken: tuple[Message, pb.HistoryEvent]) -> int:
    return 0 if taken[1].HasField("executionStarted") else 1


def queue_new_execution(tx: Transaction, record: InstanceRecord, can: ContinueAsNew, now: datetime) -> None:
    """Queues what a continued-as-new execution starts with: its executionStarted, the suspend it inherits, the
    carried-over events, then what is still queued, in arrival order.

    What is still queued arrived while the continuing turn was out, after the events it carries over; the
    queue is delivered in insertion order, so it is taken out and queued again behind them.
    """
    hub, instance_id = record.hub, record.instance_id
    at = events.to_micros(now)
    waiting = tx.visible_messages(hub, instance_id, 2**62)
    tx.delete_messages([m.id for m in waiting])
    tx.add_message(hub, instance_id, can.started.SerializeToString(), at)
    if can.suspended is not None:
        # The instance was suspended in the turn that continued it: so is the new execution.
        tx.add_message(hub, instance_id, can.suspended.SerializeToString(), at)
    for carried in can.carryover:
        tx.add_message(hub, instance_id, carried.SerializeToString(), at)
    for message in _for_new_execution(waiting, can.suspended is not None):
        tx.add_message(hub, instance_id, message.event, message.visible_at)


def _for_new_execution(waiting: Sequence[Message], suspended: bool) -> Iterator[Message]:
    """The queued messages a continued-as-new execution receives, in their order.

    Results addressed to the finished execution (timers, tasks) would confuse the new one; events and
    terminations are for the instance. Of the suspends and resumes only those that change whether the new
    execution is ``suspended`` are kept: Microsoft's worker fails an execution resumed without a suspend.
    """
    for message in waiting:
        kind = pb.HistoryEvent.FromString(message.event).WhichOneof("eventType")
        if kind in _FOR_THE_INSTANCE:
            yield message
        elif kind in ("executionSuspended", "executionResumed") and suspended != (kind == "executionSuspended"):
            suspended = not suspended
            yield message
