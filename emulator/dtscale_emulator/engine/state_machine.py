"""The pure orchestration state machine: an orchestrator's response in, new history and an outbox out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from dtscale_emulator.engine import events
from dtscale_emulator.engine.actions import HANDLERS
from dtscale_emulator.engine.actions.base import ActionContext, InstanceView, SendMessage, Termination, Transition
from dtscale_emulator.protocol import pb

__all__ = ["InstanceView", "Transition", "advance", "open_children", "status_after_events"]


def status_after_events(status: int, new_events: Sequence[pb.HistoryEvent]) -> int:
    """The runtime status implied by the delivered events, before the orchestrator's actions apply."""
    for e in new_events:
        kind = e.WhichOneof("eventType")
        if kind == "executionStarted" or (kind == "executionResumed" and status == pb.ORCHESTRATION_STATUS_SUSPENDED):
            status = pb.ORCHESTRATION_STATUS_RUNNING
        elif kind == "executionSuspended" and status not in events.TERMINAL_STATUSES:
            status = pb.ORCHESTRATION_STATUS_SUSPENDED
    return status


def _suspended_by(status: int, new_events: Sequence[pb.HistoryEvent], now: datetime) -> pb.HistoryEvent | None:
    """The executionSuspended that leaves the instance suspended after ``new_events``, if they do."""
    if status_after_events(status, new_events) != pb.ORCHESTRATION_STATUS_SUSPENDED:
        return None
    found = [e for e in new_events if e.HasField("executionSuspended")]
    return found[-1] if found else events.suspended(now, None)


def _termination(new_events: Sequence[pb.HistoryEvent]) -> pb.ExecutionTerminatedEvent | None:
    for e in new_events:
        if e.HasField("executionTerminated"):
            return e.executionTerminated
    return None


def open_children(history: Sequence[pb.HistoryEvent]) -> list[str]:
    """IDs of sub-orchestrations created in ``history`` whose result has not arrived yet."""
    created: dict[int, str] = {}
    for e in history:
        kind = e.WhichOneof("eventType")
        if kind == "subOrchestrationInstanceCreated":
            created[e.eventId] = e.subOrchestrationInstanceCreated.instanceId
        elif kind == "subOrchestrationInstanceCompleted":
            created.pop(e.subOrchestrationInstanceCompleted.taskScheduledId, None)
        elif kind == "subOrchestrationInstanceFailed":
            created.pop(e.subOrchestrationInstanceFailed.taskScheduledId, None)
    return list(created.values())


def advance(
    instance: InstanceView,
    past: Sequence[pb.HistoryEvent],
    new_events: Sequence[pb.HistoryEvent],
    response: pb.OrchestratorResponse,
    now: datetime,
    new_id: Callable[[], str],
) -> Transition:
    """Applies one orchestrator completion.

    Args:
        instance: The instance as stored before this work item.
        past: Its stored history.
        new_events: The events delivered in the work item (orchestratorStarted first).
        response: The worker's OrchestratorResponse.
        now: The current time, stamped on every event created here.
        new_id: Generates execution IDs (and sub-orchestration IDs the worker left empty).

    Returns:
        The history to append, the instance's new status/output/failure and the outbox.
    """
    custom = response.customStatus.value if response.HasField("customStatus") else None
    transition = Transition(
        history=list(new_events),
        status=status_after_events(instance.status, new_events),
        custom_status=custom,
    )
    terminated = _termination(new_events)
    if terminated is not None and instance.status not in events.TERMINAL_STATUSES:
        # Termination wins over whatever the orchestrator decided in this same turn.
        transition.status = pb.ORCHESTRATION_STATUS_TERMINATED
        transition.output = terminated.input.value if terminated.HasField("input") else None
        if terminated.recurse:
            for child in open_children([*past, *new_events]):
                transition.outbox.terminations.append(Termination(child, transition.output, True))
    else:
        ctx = ActionContext(instance, now, new_id, transition)
        for action in response.actions:
            kind = action.WhichOneof("orchestratorActionType")
            handler = HANDLERS.get(kind or "")
            if handler is None:
                raise ValueError(f"unknown orchestrator action kind {kind!r} (action id {action.id})")
            handler(ctx, action)
        if transition.continue_as_new is not None:
            # The orchestrator may have continued before it saw a suspend: the instance stays suspended.
            suspended = _suspended_by(instance.status, new_events, now)
            transition.continue_as_new = replace(transition.continue_as_new, suspended=suspended)
    _close(transition, instance, now)
    return transition


def _close(transition: Transition, instance: InstanceView, now: datetime) -> None:
    if transition.continue_as_new is not None and transition.terminal:
        transition.continue_as_new = None
    # DTS stores no orchestratorCompleted event: a turn's events end with its last action (or executionCompleted).
    if not transition.terminal:
        return
    transition.history.append(
        events.event(
            now,
            executionCompleted=pb.ExecutionCompletedEvent(
                orchestrationStatus=transition.status,  # type: ignore[arg-type]
                result=events.sv(transition.output),
                failureDetails=transition.failure,
            ),
        )
    )
    notice = parent_notification(instance, transition, now)
    if notice is not None:
        transition.outbox.messages.append(notice)


def parent_notification(instance: InstanceView, transition: Transition, now: datetime) -> SendMessage | None:
    """The sub-orchestration result event for the parent, if this instance has one."""
    if instance.parent_instance_id is None or instance.parent_task_id is None:
        return None
    task_id = instance.parent_task_id
    if transition.status == pb.ORCHESTRATION_STATUS_COMPLETED:
        result = pb.SubOrchestrationInstanceCompletedEvent(taskScheduledId=task_id, result=events.sv(transition.output))
        return SendMessage(instance.parent_instance_id, events.event(now, subOrchestrationInstanceCompleted=result))
    reason = f": {transition.output}" if transition.output else ""
    details = transition.failure or events.failure(
        "OrchestrationTerminated", f"sub-orchestration '{instance.instance_id}' was terminated{reason}"
    )
    failed = pb.SubOrchestrationInstanceFailedEvent(taskScheduledId=task_id, failureDetails=details)
    return SendMessage(instance.parent_instance_id, events.event(now, subOrchestrationInstanceFailed=failed))
