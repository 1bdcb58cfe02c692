"""One handler per orchestrator action kind, looked up by the action's oneof name."""

from __future__ import annotations

from dtscale_emulator.engine.actions.base import ActionHandler
from dtscale_emulator.engine.actions.messaging import rewind_orchestration, send_entity_message, send_event
from dtscale_emulator.engine.actions.orchestrations import (
    complete_orchestration,
    create_sub_orchestration,
    terminate_orchestration,
)
from dtscale_emulator.engine.actions.tasks import create_timer, schedule_task

HANDLERS: dict[str, ActionHandler] = {
    "scheduleTask": schedule_task,
    "createTimer": create_timer,
    "createSubOrchestration": create_sub_orchestration,
    "sendEvent": send_event,
    "completeOrchestration": complete_orchestration,
    "terminateOrchestration": terminate_orchestration,
    "sendEntityMessage": send_entity_message,
    "rewindOrchestration": rewind_orchestration,
}

__all__ = ["HANDLERS"]
