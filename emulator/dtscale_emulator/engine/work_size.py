"""Work items no larger than a worker receives: which queued events one takes, and what happens when even the
smallest one would be too large (the instance fails, naming the sizes).

A work item over a worker's receive limit fails the worker's whole stream (``RESOURCE_EXHAUSTED``); the worker
connects again and is sent the same item again, forever, while nothing else it should run reaches it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from dtscale_emulator.engine import delivery, entity_ops, events, outbox
from dtscale_emulator.engine.state_machine import advance
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import InstanceRecord, Message, Transaction

#: gRPC's default receive limit, which workers keep unless configured otherwise (Microsoft's SDK does).
WORK_ITEM_BYTES = 4 * 1024 * 1024
#: Room for a work item's fields besides its events: IDs, trace context, the completion token, framing.
ITEM_OVERHEAD = 16 * 1024
#: ``errorType`` of the failure of an instance whose next work item could not be sent.
WORK_ITEM_TOO_LARGE = "WorkItemTooLarge"


def taken_within(messages: Sequence[Message], budget: int) -> list[Message]:
    """The queued messages one work item takes: in queue order while they fit in ``budget`` bytes, at least one.

    The rest stay queued for the next work item. An execution's executionStarted is always the first message
    of its queue (it is queued with the instance, or again first when it continues as new), so it is never
    left behind the events that follow it.
    """
    size = 0
    for count, message in enumerate(messages):
        size += len(message.event)
        if count and size > budget:
            return list(messages[:count])
    return list(messages)


def fail_unsendable(
    tx: Transaction,
    record: InstanceRecord,
    taken: tuple[list[int], list[pb.HistoryEvent]],
    history_length: int,
    problem: str,
    now: datetime,
    new_id: Callable[[], str],
) -> None:
    """Fails an instance as a turn that failed it would: its new events are recorded, its parent told.

    Args:
        taken: The IDs of the queued messages the work item would have taken, and their events.
        problem: Why the work item is too large, for the failure's message.
    """
    message_ids, new_events = taken
    details = events.failure(
        WORK_ITEM_TOO_LARGE,
        f"the next work item of orchestration '{record.instance_id}' cannot be sent: {problem}; a worker receives "
        f"at most {WORK_ITEM_BYTES} bytes (gRPC's default receive limit)",
    )
    failed = pb.CompleteOrchestrationAction(orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED, failureDetails=details)
    response = pb.OrchestratorResponse(actions=[pb.OrchestratorAction(id=-1, completeOrchestration=failed)])
    transition = advance(delivery.view(record), [], new_events, response, now, new_id)
    hub = record.hub
    tx.delete_messages(message_ids)
    tx.append_history(hub, record.instance_id, [e.SerializeToString() for e in transition.history], history_length)
    record.status = transition.status
    record.updated_at = events.to_micros(now)
    record.lock_token = record.lock_expires = None
    outbox.finish(tx, record, transition.output, transition.failure)
    tx.put_instance(record)
    outbox.apply(tx, hub, record, transition.outbox, now)
    entity_ops.release_owner(tx, hub, record.instance_id, now)
