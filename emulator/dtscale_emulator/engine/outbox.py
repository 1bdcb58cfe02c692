"""Applies a transition's outbox and instance-to-instance effects inside an open storage transaction."""

from __future__ import annotations

import uuid
from datetime import datetime

from dtscale_emulator.engine import entity_ops, events
from dtscale_emulator.engine.actions.base import NewInstance, Outbox, SendMessage, Transition
from dtscale_emulator.engine.delivery import deliver, is_terminal, not_started, view
from dtscale_emulator.engine.state_machine import parent_notification
from dtscale_emulator.protocol import pb
from dtscale_emulator.storage import InstanceRecord, Transaction


def create_child(tx: Transaction, hub: str, parent: InstanceRecord, child: NewInstance, now: datetime) -> None:
    existing = tx.get_instance(hub, child.instance_id)
    if existing is not None and not is_terminal(existing):
        failed = pb.SubOrchestrationInstanceFailedEvent(
            taskScheduledId=child.parent_task_id,
            failureDetails=events.failure(
                "OrchestrationAlreadyExists", f"an active instance with ID '{child.instance_id}' already exists"
            ),
        )
        deliver(tx, hub, SendMessage(parent.instance_id, events.event(now, subOrchestrationInstanceFailed=failed)), now)
        return
    if existing is not None:
        tx.delete_instance(hub, child.instance_id)
    at = events.to_micros(now)
    started = child.started.executionStarted
    tx.put_instance(
        InstanceRecord(
            hub=hub,
            instance_id=child.instance_id,
            execution_id=started.orchestrationInstance.executionId.value,
            name=child.name,
            version=child.version,
            status=pb.ORCHESTRATION_STATUS_PENDING,
            input=child.input,
            tags=child.tags,
            created_at=at,
            updated_at=at,
            parent_instance_id=parent.instance_id,
            parent_execution_id=parent.execution_id,
            parent_task_id=child.parent_task_id,
        )
    )
    tx.add_message(hub, child.instance_id, child.started.SerializeToString(), at)


def terminate(tx: Transaction, hub: str, instance_id: str, reason: str | None, recurse: bool, now: datetime) -> bool:
    """Terminates an instance: at once if it never ran, otherwise via an executionTerminated message.

    Returns False when the instance does not exist.
    """
    record = tx.get_instance(hub, instance_id)
    if record is None:
        return False
    if is_terminal(record):
        return True
    if not not_started(record):
        tx.add_message(
            hub, instance_id, events.terminated(now, reason, recurse).SerializeToString(), events.to_micros(now)
        )
        return True
    # Nothing has run, so no worker needs to see the termination; finish it here.
    finish_terminated(tx, record, reason, now, record_history=False)
    return True


def finish_terminated(
    tx: Transaction, record: InstanceRecord, reason: str | None, now: datetime, record_history: bool
) -> None:
    """Marks an instance TERMINATED without involving a worker, dropping its pending work."""
    hub, instance_id = record.hub, record.instance_id
    tx.delete_instance_messages(hub, instance_id)
    # Activities already running may still report back (their results are dropped); the rest never start.
    tx.delete_instance_activities(hub, instance_id, only_idle=True)
    if record_history:
        completed = pb.ExecutionCompletedEvent(
            orchestrationStatus=pb.ORCHESTRATION_STATUS_TERMINATED, result=events.sv(reason)
        )
        tx.append_history(
            hub,
            instance_id,
            [
                events.terminated(now, reason, False).SerializeToString(),
                events.event(now, executionCompleted=completed).SerializeToString(),
            ],
        )
    record.status = pb.ORCHESTRATION_STATUS_TERMINATED
    record.output = reason
    record.updated_at = record.completed_at = events.to_micros(now)
    # Clearing the lease makes any in-flight completion for this instance stale.
    record.lock_token = record.lock_expires = None
    tx.put_instance(record)
    entity_ops.release_owner(tx, hub, instance_id, now)
    done = Transition(history=[], status=record.status, custom_status=None, output=reason)
    notice = parent_notification(view(record), done, now)
    if notice is not None:
        deliver(tx, hub, notice, now)


def finish(tx: Transaction, record: InstanceRecord, output: str | None, failure: pb.TaskFailureDetails | None) -> None:
    """Records how a turn ended an instance and drops the work nothing can consume any more."""
    record.output = output
    record.failure = None if failure is None else failure.SerializeToString()
    record.completed_at = record.updated_at
    tx.delete_instance_messages(record.hub, record.instance_id)
    # Activities not yet handed out need not run.
    tx.delete_instance_activities(record.hub, record.instance_id, only_idle=True)


def rewind(
    tx: Transaction, record: InstanceRecord, reason: str | None, now: datetime, parent_execution: str | None
) -> None:
    """Reopens a failed instance and asks its worker (via executionRewound) to rewrite the history."""
    record.status = pb.ORCHESTRATION_STATUS_RUNNING
    record.output = record.failure = record.completed_at = None
    record.updated_at = events.to_micros(now)
    tx.put_instance(record)
    event = events.rewound(now, reason, parent_execution)
    tx.add_message(record.hub, record.instance_id, event.SerializeToString(), events.to_micros(now))


def replace_history(tx: Transaction, record: InstanceRecord, history: list[pb.HistoryEvent], now: datetime) -> None:
    """Installs a rewound history, then rewinds (or re-creates) sub-orchestrations that had not succeeded."""
    hub = record.hub
    tx.clear_history(hub, record.instance_id)
    # A worker rewrites the history it was given, which has no orchestratorCompleted events; one that adds
    # some anyway does not get them stored.
    history = [e for e in history if not e.HasField("orchestratorCompleted")]
    tx.append_history(hub, record.instance_id, [e.SerializeToString() for e in history])
    reason = None
    for e in history:
        kind = e.WhichOneof("eventType")
        if kind == "executionStarted":
            record.execution_id = e.executionStarted.orchestrationInstance.executionId.value or record.execution_id
        elif kind == "executionRewound" and e.executionRewound.HasField("reason"):
            reason = e.executionRewound.reason.value
    # A lone orchestratorStarted makes the instance runnable so the worker replays the clean history.
    tx.add_message(hub, record.instance_id, events.orchestrator_started(now).SerializeToString(), events.to_micros(now))
    for created in unfinished_children(history):
        child = tx.get_instance(hub, created.subOrchestrationInstanceCreated.instanceId)
        if child is None:
            create_child(tx, hub, record, _recreated(record, created, now), now)
        elif child.status == pb.ORCHESTRATION_STATUS_FAILED:
            rewind(tx, child, reason, now, record.execution_id)


def unfinished_children(history: list[pb.HistoryEvent]) -> list[pb.HistoryEvent]:
    created = {e.eventId: e for e in history if e.HasField("subOrchestrationInstanceCreated")}
    for e in history:
        if e.HasField("subOrchestrationInstanceCompleted"):
            created.pop(e.subOrchestrationInstanceCompleted.taskScheduledId, None)
    return list(created.values())


def _recreated(parent: InstanceRecord, created: pb.HistoryEvent, now: datetime) -> NewInstance:
    sub = created.subOrchestrationInstanceCreated
    version = events.opt(sub.version, sub.HasField("version"))
    child_input = events.opt(sub.input, sub.HasField("input"))
    info = events.parent_info(created.eventId, parent.instance_id, parent.execution_id, parent.name, parent.version)
    started = events.execution_started(
        now,
        instance_id=sub.instanceId,
        execution_id=uuid.uuid4().hex,
        name=sub.name,
        version=version,
        input=child_input,
        tags=dict(sub.tags),
        parent=info,
    )
    return NewInstance(sub.instanceId, sub.name, version, child_input, dict(sub.tags), started, created.eventId)


def apply(tx: Transaction, hub: str, record: InstanceRecord, outbox: Outbox, now: datetime) -> None:
    """Commits everything an orchestrator's turn asked to happen elsewhere."""
    for task in outbox.activities:
        req = task.request
        # Work-item filters match an activity scheduled without a version by its orchestration's version, so
        # a worker filtering both on ["3.0.0"] runs a 3.0.0 orchestration's activities (as on DTS; the
        # JavaScript and Python SDKs send none). The request the worker gets is left as it was scheduled.
        version = req.version.value if req.HasField("version") else record.version
        tx.add_activity(hub, record.instance_id, req.taskId, req.name, version, req.SerializeToString())
    for timer in outbox.timers:
        tx.add_message(hub, record.instance_id, timer.event.SerializeToString(), events.to_micros(timer.fire_at))
    for child in outbox.instances:
        create_child(tx, hub, record, child, now)
    for message in outbox.messages:
        deliver(tx, hub, message, now)
    for term in outbox.terminations:
        terminate(tx, hub, term.instance_id, term.reason, term.recurse, now)
    for entity_message in outbox.entity_messages:
        entity_ops.from_orchestration(tx, hub, record.instance_id, entity_message, now)
