"""Action handlers that message other instances or rewrite history, and the one that fails an unknown action."""

from __future__ import annotations

from dtscale_emulator.engine import events
from dtscale_emulator.engine.actions.base import ActionContext, SendMessage
from dtscale_emulator.protocol import pb


def send_event(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    send = action.sendEvent
    data = events.opt(send.data, send.HasField("data"))
    target = send.instance.instanceId
    ctx.transition.history.append(
        events.event(
            ctx.now,
            action.id,
            eventSent=pb.EventSentEvent(instanceId=target, name=send.name, input=events.sv(data)),
        )
    )
    ctx.transition.outbox.messages.append(SendMessage(target, events.event_raised(ctx.now, send.name, data)))


def send_entity_message(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    """Records the entity message (signal, call, lock or unlock) and hands it to the entity layer."""
    message = action.sendEntityMessage
    kind = message.WhichOneof("EntityMessageType")
    if kind is None:
        unsupported(ctx, action)
        return
    ctx.transition.history.append(events.event(ctx.now, action.id, **{kind: getattr(message, kind)}))
    ctx.transition.outbox.entity_messages.append(message)


def unsupported(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    """Fails the orchestration visibly instead of silently dropping an action the emulator cannot honour."""
    kind = action.WhichOneof("orchestratorActionType") or "unknown"
    transition = ctx.transition
    transition.status = pb.ORCHESTRATION_STATUS_FAILED
    transition.output = None
    transition.failure = events.failure("NotSupportedError", f"the emulator cannot apply this '{kind}' action")


def rewind_orchestration(ctx: ActionContext, action: pb.OrchestratorAction) -> None:
    """The worker's rewritten history replaces the stored one; the instance runs again from it."""
    transition = ctx.transition
    transition.rewound_history = list(action.rewindOrchestration.newHistory)
    transition.status = pb.ORCHESTRATION_STATUS_RUNNING
    transition.output = None
    transition.failure = None
