"""Pending orchestrator actions for entity messages: call, signal, lock request and unlock."""

from __future__ import annotations

from datetime import datetime

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.actions import PendingAction


def _target(event: pb.HistoryEvent, kind: str) -> str:
    message = getattr(event, kind)
    if kind == "entityLockRequested":
        return ",".join(message.lockSet)
    return str(message.targetInstanceId.value)


class EntityMessage(PendingAction):
    """An entity message; ``name`` is the operation (empty for locks), ``target`` the entity or lock set."""

    __slots__ = ("target",)

    def __init__(self, id: int, name: str, target: str) -> None:
        super().__init__(id, name)
        self.target = target

    def describe(self) -> str:
        return f"{self.method}({self.target!r}, {self.name!r})" if self.name else f"{self.method}({self.target!r})"

    def matches(self, event: pb.HistoryEvent) -> bool:
        """Whether ``event`` records this very message (same kind, target and operation)."""
        kind = self.event_kind
        if event.WhichOneof("eventType") != kind or _target(event, kind) != self.target:
            return False
        return not self.name or getattr(event, kind).operation == self.name

    def message(self) -> pb.SendEntityMessageAction:
        raise NotImplementedError

    def to_proto(self) -> pb.OrchestratorAction:
        out = pb.OrchestratorAction(id=self.id)
        self.fill(out.sendEntityMessage)
        return out

    def fill(self, message: pb.SendEntityMessageAction) -> None:
        """Write the entity message into ``message`` (in place, so a payload is not copied twice)."""
        message.CopyFrom(self.message())


class CallEntity(EntityMessage):
    __slots__ = ("input", "parent", "request_id")
    event_kind = "entityOperationCalled"
    method = "call_entity"
    payload_attribute = "input"

    def __init__(self, id: int, target: str, operation: str, input: str | None, request_id: str, parent: str) -> None:
        super().__init__(id, operation, target)
        self.input = input
        self.request_id = request_id
        self.parent = parent

    def message(self) -> pb.SendEntityMessageAction:
        message = pb.SendEntityMessageAction()
        self.fill(message)
        return message

    def fill(self, message: pb.SendEntityMessageAction) -> None:
        called = message.entityOperationCalled
        called.requestId = self.request_id
        called.operation = self.name
        called.targetInstanceId.value = self.target
        called.parentInstanceId.value = self.parent
        if self.input is not None:
            called.input.value = self.input


class SignalEntity(EntityMessage):
    __slots__ = ("input", "request_id", "scheduled_time")
    event_kind = "entityOperationSignaled"
    method = "signal_entity"
    payload_attribute = "input"

    def __init__(
        self, id: int, target: str, operation: str, input: str | None, request_id: str, scheduled_time: datetime | None
    ) -> None:
        super().__init__(id, operation, target)
        self.input = input
        self.request_id = request_id
        self.scheduled_time = scheduled_time

    def message(self) -> pb.SendEntityMessageAction:
        message = pb.SendEntityMessageAction()
        self.fill(message)
        return message

    def fill(self, message: pb.SendEntityMessageAction) -> None:
        signaled = message.entityOperationSignaled
        signaled.requestId = self.request_id
        signaled.operation = self.name
        signaled.targetInstanceId.value = self.target
        if self.input is not None:
            signaled.input.value = self.input
        if self.scheduled_time is not None:
            signaled.scheduledTime.FromDatetime(self.scheduled_time)


class LockEntities(EntityMessage):
    __slots__ = ("lock_set", "parent", "section_id")
    event_kind = "entityLockRequested"
    method = "lock_entities"

    def __init__(self, id: int, section_id: str, lock_set: list[str], parent: str) -> None:
        super().__init__(id, "", ",".join(lock_set))
        self.section_id = section_id
        self.lock_set = lock_set
        self.parent = parent

    def message(self) -> pb.SendEntityMessageAction:
        requested = pb.EntityLockRequestedEvent(criticalSectionId=self.section_id, lockSet=self.lock_set, position=0)
        requested.parentInstanceId.value = self.parent
        return pb.SendEntityMessageAction(entityLockRequested=requested)


class UnlockEntity(EntityMessage):
    __slots__ = ("parent", "section_id")
    event_kind = "entityUnlockSent"
    method = "unlock"

    def __init__(self, id: int, section_id: str, target: str, parent: str) -> None:
        super().__init__(id, "", target)
        self.section_id = section_id
        self.parent = parent

    def describe(self) -> str:
        return f"the release of the lock on {self.target!r}"

    def message(self) -> pb.SendEntityMessageAction:
        unlock = pb.EntityUnlockSentEvent(criticalSectionId=self.section_id)
        unlock.targetInstanceId.value = self.target
        unlock.parentInstanceId.value = self.parent
        return pb.SendEntityMessageAction(entityUnlockSent=unlock)
