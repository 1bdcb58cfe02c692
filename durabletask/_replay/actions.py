"""Pending orchestrator actions: cheap records during replay, turned into protobuf only when sent."""

from __future__ import annotations

from datetime import datetime

from durabletask._proto import orchestrator_service_pb2 as pb


class PendingAction:
    """One durable call awaiting confirmation by its recorded history event.

    ``event_kind`` is the ``HistoryEvent`` oneof name that confirms it; ``name`` is what replay compares.
    Subclasses add their payload and build the wire message lazily: a replayed action is matched and
    dropped without ever being converted.
    """

    __slots__ = ("id", "name")
    event_kind: str = ""
    #: The context method that produced the action, for non-determinism messages.
    method: str = ""
    #: The attribute holding the action's payload (JSON text), if it has one.
    payload_attribute: str = ""

    def __init__(self, id: int, name: str) -> None:
        self.id = id
        self.name = name

    def describe(self) -> str:
        """How the call reads in an error message, e.g. ``call_activity('charge')``."""
        return f"{self.method}({self.name!r})" if self.name else f"{self.method}()"

    def release_payload(self) -> None:
        """Drop the payload once the action is sent: a resumed session keeps the action only to match it with
        its history event, which compares kinds and names, and a large payload would stay in memory for that."""
        if self.payload_attribute:
            setattr(self, self.payload_attribute, None)

    def to_proto(self) -> pb.OrchestratorAction:
        raise NotImplementedError


class ScheduleTask(PendingAction):
    __slots__ = ("input", "tags", "version")
    event_kind = "taskScheduled"
    method = "call_activity"
    payload_attribute = "input"

    def __init__(self, id: int, name: str, input: str | None, tags: dict[str, str] | None, version: str | None) -> None:
        # Assigned inline rather than via super(): one of these is built per activity call on replay.
        self.id = id
        self.name = name
        self.input = input
        self.tags = tags
        self.version = version

    def to_proto(self) -> pb.OrchestratorAction:
        # Filled in place: wrapping a finished message would copy its payload (protobuf has no moves).
        out = pb.OrchestratorAction(id=self.id)
        action = out.scheduleTask
        action.name = self.name
        if self.tags:
            action.tags.update(self.tags)
        if self.input is not None:
            action.input.value = self.input
        if self.version:
            action.version.value = self.version
        return out


class CreateSubOrchestration(PendingAction):
    __slots__ = ("input", "instance_id", "tags", "version")
    event_kind = "subOrchestrationInstanceCreated"
    method = "call_sub_orchestrator"
    payload_attribute = "input"

    def __init__(
        self, id: int, name: str, instance_id: str, input: str | None, version: str | None, tags: dict[str, str] | None
    ) -> None:
        super().__init__(id, name)
        self.instance_id = instance_id
        self.input = input
        self.version = version
        self.tags = tags

    def to_proto(self) -> pb.OrchestratorAction:
        out = pb.OrchestratorAction(id=self.id)
        action = out.createSubOrchestration
        action.name = self.name
        action.instanceId = self.instance_id
        if self.tags:
            action.tags.update(self.tags)
        if self.input is not None:
            action.input.value = self.input
        if self.version:
            action.version.value = self.version
        return out


class CreateTimer(PendingAction):
    __slots__ = ("fire_at",)
    event_kind = "timerCreated"
    method = "create_timer"

    def __init__(self, id: int, fire_at: datetime) -> None:
        super().__init__(id, "")
        self.fire_at = fire_at

    def to_proto(self) -> pb.OrchestratorAction:
        action = pb.CreateTimerAction()
        action.fireAt.FromDatetime(self.fire_at)
        return pb.OrchestratorAction(id=self.id, createTimer=action)


class SendEvent(PendingAction):
    __slots__ = ("data", "instance_id")
    event_kind = "eventSent"
    method = "send_event"
    payload_attribute = "data"

    def __init__(self, id: int, instance_id: str, name: str, data: str | None) -> None:
        super().__init__(id, name)
        self.instance_id = instance_id
        self.data = data

    def describe(self) -> str:
        return f"send_event({self.instance_id!r}, {self.name!r})"

    def to_proto(self) -> pb.OrchestratorAction:
        out = pb.OrchestratorAction(id=self.id)
        action = out.sendEvent
        action.instance.instanceId = self.instance_id
        action.name = self.name
        if self.data is not None:
            action.data.value = self.data
        return out


def complete_action(
    id: int,
    status: pb.OrchestrationStatus,
    result: str | None,
    failure: pb.TaskFailureDetails | None = None,
    carryover: list[pb.HistoryEvent] | None = None,
    new_version: str | None = None,
) -> pb.OrchestratorAction:
    """The action that ends the current execution (completed, failed, terminated or continued-as-new)."""
    out = pb.OrchestratorAction(id=id)
    action = out.completeOrchestration
    action.orchestrationStatus = status
    if failure is not None:
        action.failureDetails.CopyFrom(failure)
    if carryover:
        action.carryoverEvents.extend(carryover)
    if result is not None:
        action.result.value = result
    if new_version:
        action.newVersion.value = new_version
    return out
