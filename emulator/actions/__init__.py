"""One handler per orchestrator action kind, looked up by the action's oneof name."""

from __future__ import annotations

from emulator.actions.base import ActionHandler
from emulator.actions.messaging import rewind_orchestration, send_entity_message, send_event
from emulator.actions.orchestrations import (
    complete_orchestration,
    create_sub_orchestration,
    terminate_orchestration,
)
from emulator.actions.tasks import create_timer, schedule_task

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
