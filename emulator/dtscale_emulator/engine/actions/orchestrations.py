"""Action handlers that create, finish or terminate orchestrations."""

from __future__ import annotations

from dtscale_emulator.engine import events
from dtscale_emulator.engine.actions.base import ActionContext, ContinueAsNew, InstanceView, NewInstance, Termination
from dtscale_emulator.protocol import pb


def create_sub_orchestration(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    sub = action.createSubOrchestration
    child_id = sub.instanceId or ctx.new_id()
    version = events.opt(sub.version, sub.HasField("version"))
    child_input = events.opt(sub.input, sub.HasField("input"))
    trace = sub.parentTraceContext if sub.HasField("parentTraceContext") else None
    ctx.transition.history.append(
        events.event(
            ctx.now,
            action.id,
            subOrchestrationInstanceCreated=pb.SubOrchestrationInstanceCreatedEvent(
                instanceId=child_id,
                name=sub.name,
                version=events.sv(version),
                input=events.sv(child_input),
                parentTraceContext=trace,
                tags=dict(sub.tags),
            ),
        )
    )
    inst = ctx.instance
    parent = events.parent_info(action.id, inst.instance_id, inst.execution_id, inst.name, inst.version)
    started = events.execution_started(
        ctx.now,
        instance_id=child_id,
        execution_id=ctx.new_id(),
        name=sub.name,
        version=version,
        input=child_input,
        tags=dict(sub.tags),
        parent=parent,
        trace=trace,
    )
    ctx.transition.outbox.instances.append(
        NewInstance(child_id, sub.name, version, child_input, dict(sub.tags), started, action.id)
    )


def complete_orchestration(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    done = action.completeOrchestration
    result = events.opt(done.result, done.HasField("result"))
    transition = ctx.transition
    if done.orchestrationStatus == pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW:
        inst = ctx.instance
        version = events.opt(done.newVersion, done.HasField("newVersion")) or inst.version
        execution_id = ctx.new_id()
        started = events.execution_started(
            ctx.now,
            instance_id=inst.instance_id,
            execution_id=execution_id,
            name=inst.name,
            version=version,
            input=result,
            tags=dict(done.tags) or inst.tags,
            parent=_parent_info(inst) if inst.parent_instance_id else None,
        )
        transition.continue_as_new = ContinueAsNew(execution_id, version, result, started, list(done.carryoverEvents))
        transition.status = pb.ORCHESTRATION_STATUS_RUNNING
        return
    transition.status = done.orchestrationStatus
    transition.output = result
    transition.failure = done.failureDetails if done.HasField("failureDetails") else None


def _parent_info(inst: InstanceView) -> pb.ParentInstanceInfo:
    return events.parent_info(inst.parent_task_id or 0, inst.parent_instance_id or "", inst.parent_execution_id)


def terminate_orchestration(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    term = action.terminateOrchestration
    ctx.transition.outbox.terminations.append(
        Termination(term.instanceId, events.opt(term.reason, term.HasField("reason")), term.recurse)
    )
