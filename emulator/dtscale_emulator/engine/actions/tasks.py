"""Action handlers that schedule work for later: activities and durable timers."""

from __future__ import annotations

from dtscale_emulator.engine import events
from dtscale_emulator.engine.actions.base import ActionContext, ActivityTask, TimerTask
from dtscale_emulator.protocol import pb


def schedule_task(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    task = action.scheduleTask
    ctx.transition.history.append(
        events.event(
            ctx.now,
            action.id,
            taskScheduled=pb.TaskScheduledEvent(
                name=task.name,
                version=task.version if task.HasField("version") else None,
                input=task.input if task.HasField("input") else None,
                tags=dict(task.tags),
                parentTraceContext=task.parentTraceContext if task.HasField("parentTraceContext") else None,
            ),
        )
    )
    inst = ctx.instance
    request = pb.ActivityRequest(
        name=task.name,
        version=task.version if task.HasField("version") else None,
        input=task.input if task.HasField("input") else None,
        orchestrationInstance=pb.OrchestrationInstance(
            instanceId=inst.instance_id, executionId=events.sv(inst.execution_id)
        ),
        taskId=action.id,
        parentTraceContext=task.parentTraceContext if task.HasField("parentTraceContext") else None,
        tags=dict(task.tags),
    )
    ctx.transition.outbox.activities.append(ActivityTask(request))


def create_timer(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    fire_at = action.createTimer.fireAt
    ctx.transition.history.append(events.event(ctx.now, action.id, timerCreated=pb.TimerCreatedEvent(fireAt=fire_at)))
    fired = events.event(ctx.now, timerFired=pb.TimerFiredEvent(fireAt=fire_at, timerId=action.id))
    when = fire_at.ToDatetime(tzinfo=ctx.now.tzinfo)
    # The fired event carries the time it became due, which is when the orchestrator observes it.
    fired.timestamp.CopyFrom(fire_at)
    ctx.transition.outbox.timers.append(TimerTask(when, fired))
