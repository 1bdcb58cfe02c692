"""Durable entities from orchestrations: call, signal, lock, the critical-section rules and the event handlers."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.critical_section import OrchestrationEntityContext
from durabletask._replay.entity_actions import CallEntity, EntityMessage, LockEntities, SignalEntity, UnlockEntity
from durabletask._replay.failures import NonDeterminismError, OrchestrationStateError
from durabletask._replay.handlers import Handler, HandlerTable
from durabletask._replay.runtime import RuntimeContext, naive_utc
from durabletask._replay.tasks import CompletableTask, LockTask
from durabletask._streams.wire import is_head
from durabletask.entities.entity_context import to_entity_id
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.entities.entity_lock import EntityLock
from durabletask.entities.entity_operation_failed_exception import EntityOperationFailedException

_logger = logging.getLogger("durabletask.replay")

_ADVICE = (
    "The orchestrator code is not deterministic, or it changed after this instance started; "
    "keep code changes compatible with running instances or version the orchestrator."
)


class OrchestrationEntities:
    """Entity support for one orchestration execution (see :class:`~durabletask._replay.runtime.EntitySupport`)."""

    def __init__(self, rt: RuntimeContext) -> None:
        self._rt = rt
        self.section = OrchestrationEntityContext(rt.instance_id)
        # requestId → (sequence ID of the call, entity, operation), for matching results to calls.
        self.calls: dict[str, tuple[int, EntityInstanceId, str]] = {}
        # criticalSectionId → sequence ID of the lock request.
        self.lock_requests: dict[str, int] = {}

    @property
    def in_critical_section(self) -> bool:
        return self.section.is_inside_critical_section

    # ---- calls from the orchestrator ---------------------------------------------------------
    def call_entity(
        self, entity: Any, operation: str, input: Any = None, *, return_type: type | None = None
    ) -> CompletableTask[Any]:
        rt = self._rt
        # Each request takes its ID before it is checked, as in the official SDK, so a refused request
        # that the orchestrator catches leaves later IDs the same under both SDKs.
        seq = rt.next_sequence_id()
        entity_id = to_entity_id(entity)
        _require_operation(operation)
        _allowed(self.section.validate_operation_transition(entity_id, one_way=False))
        encoded = rt.codec.encode(input, "input of entity operation '{}'", operation)
        request_id = rt.new_uuid()
        task: CompletableTask[Any] = CompletableTask(return_type)
        rt.schedule(CallEntity(seq, str(entity_id), operation, encoded, request_id, rt.instance_id), task)
        self.calls[request_id] = (seq, entity_id, operation)
        return task

    def signal_entity(
        self, entity_id: Any, operation_name: str, input: Any = None, signal_time: datetime | None = None
    ) -> None:
        rt = self._rt
        seq = rt.next_sequence_id()
        target = to_entity_id(entity_id)
        _require_operation(operation_name)
        _allowed(self.section.validate_operation_transition(target, one_way=True))
        if signal_time is not None and not isinstance(signal_time, datetime):
            raise TypeError(f"signal_time must be a datetime, not {type(signal_time).__name__}")
        encoded = rt.codec.encode(input, "input of entity operation '{}'", operation_name)
        at = naive_utc(signal_time) if signal_time is not None else None
        rt.schedule(SignalEntity(seq, str(target), operation_name, encoded, rt.new_uuid(), at), None)

    def lock_entities(self, entities: list[Any]) -> LockTask[EntityLock]:
        rt = self._rt
        seq = rt.next_sequence_id()
        _allowed(self.section.validate_acquire_transition())
        if isinstance(entities, (str, EntityInstanceId)):
            raise TypeError("lock_entities takes a list of entities")
        section_id = rt.new_uuid()
        request, _ = self.section.emit_acquire_message(section_id, [to_entity_id(entity) for entity in entities])
        if request is None:
            raise ValueError("lock_entities needs at least one entity to lock")
        task: LockTask[EntityLock] = LockTask()
        lock_set = list(request.entityLockRequested.lockSet)
        rt.schedule(LockEntities(seq, section_id, lock_set, rt.instance_id), task)
        self.lock_requests[section_id] = seq
        return task

    def exit_critical_section(self) -> None:
        rt = self._rt
        # Nothing to send once the section was left, e.g. by continue_as_new inside the with block.
        for message in self.section.emit_lock_release_messages():
            unlock = message.entityUnlockSent
            target = unlock.targetInstanceId.value
            rt.schedule(UnlockEntity(rt.next_sequence_id(), unlock.criticalSectionId, target, rt.instance_id), None)

    # ---- results -----------------------------------------------------------------------------
    def lock_granted(self, section_id: str) -> None:
        if self.section.critical_section_id == section_id:
            self.section.complete_acquire(section_id)

    def call_returned(self, entity_id: EntityInstanceId) -> None:
        section = self.section
        # Only a locked entity becomes callable again (a call made before the section may return inside it).
        if not section.lock_acquisition_pending and entity_id in section.critical_section_locks:
            section.recover_lock_after_call(entity_id)


def _allowed(verdict: tuple[bool, str]) -> None:
    # Refusals are RuntimeErrors with the critical-section rule's own words, as in Microsoft's SDK (the recorded
    # failure type, builtins.RuntimeError, is then the same under both).
    allowed, reason = verdict
    if not allowed:
        raise RuntimeError(reason)


def _require_operation(operation: str) -> None:
    if not isinstance(operation, str) or not operation:
        raise ValueError("the entity operation name must be a non-empty string")


def _support(rt: RuntimeContext) -> OrchestrationEntities:
    support = rt.entities
    if not isinstance(support, OrchestrationEntities):
        raise OrchestrationStateError("entity events need the built-in entity support")
    return support


# ---- history event handlers ---------------------------------------------------------------------


def _recorded(event: pb.HistoryEvent, kind: str) -> str:
    message = getattr(event, kind)
    if kind == "entityLockRequested":
        return f"lock_entities({list(message.lockSet)!r})"
    if kind == "entityUnlockSent":
        return f"the release of the lock on {message.targetInstanceId.value!r}"
    method = "call_entity" if kind == "entityOperationCalled" else "signal_entity"
    return f"{method}({message.targetInstanceId.value!r}, {message.operation!r})"


def _on_entity_message_recorded(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    kind = str(event.WhichOneof("eventType"))
    if kind == "entityOperationSignaled" and is_head(event.entityOperationSignaled.targetInstanceId.value):
        # A turn's stream output (durabletask._streams.turns): not a call of the code, so nothing to confirm.
        rt.stream.on_recorded(event.entityOperationSignaled.input.value)
        return
    action = rt.confirm(event.eventId)
    if isinstance(action, EntityMessage) and action.matches(event):
        return
    now = f"calls {action.describe()}" if action is not None else "makes no call"
    raise NonDeterminismError(
        f"Non-deterministic orchestration: history records {_recorded(event, kind)} with ID {event.eventId}, "
        f"but the current code {now} with that ID. {_ADVICE}"
    )


def _on_operation_completed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    done = event.entityOperationCompleted
    found = _take_call(rt, done.requestId)
    if found is None:
        return
    task, entity_id, _ = found
    value = rt.codec.decode(done.output.value if done.HasField("output") else None, task._expected_type)
    _support(rt).call_returned(entity_id)
    task.complete(value)
    rt.resume()


def _on_operation_failed(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    failed = event.entityOperationFailed
    found = _take_call(rt, failed.requestId)
    if found is None:
        return
    task, entity_id, operation = found
    error = EntityOperationFailedException(entity_id, operation, failed.failureDetails)
    _support(rt).call_returned(entity_id)
    task.fail(str(error), error)
    rt.resume()


def _take_call(rt: RuntimeContext, request_id: str) -> tuple[CompletableTask[Any], EntityInstanceId, str] | None:
    call = _support(rt).calls.pop(request_id, None)
    task = rt.open.pop(call[0], None) if call is not None else None
    if call is None or task is None:
        # A result the code no longer waits for (or one for another execution): nothing to resume.
        _logger.debug("%s: ignoring an entity result for unknown request '%s'", rt.instance_id, request_id)
        return None
    return task, call[1], call[2]


def _on_lock_granted(rt: RuntimeContext, event: pb.HistoryEvent) -> None:
    section_id = event.entityLockGranted.criticalSectionId
    support = _support(rt)
    seq = support.lock_requests.pop(section_id, None)
    task = rt.open.pop(seq, None) if seq is not None else None
    if task is None:
        _logger.debug("%s: ignoring a lock grant for unknown critical section '%s'", rt.instance_id, section_id)
        return
    support.lock_granted(section_id)
    task.complete(EntityLock(rt))
    rt.resume()


HANDLERS: dict[str, Handler] = {
    "entityOperationCalled": _on_entity_message_recorded,
    "entityOperationSignaled": _on_entity_message_recorded,
    "entityLockRequested": _on_entity_message_recorded,
    "entityUnlockSent": _on_entity_message_recorded,
    "entityOperationCompleted": _on_operation_completed,
    "entityOperationFailed": _on_operation_failed,
    "entityLockGranted": _on_lock_granted,
}


def install(table: HandlerTable, kinds: Iterable[str] = HANDLERS) -> None:
    """Register the entity event handlers in an executor's handler table."""
    if kinds is HANDLERS:  # every executor's: one update rather than a call per kind
        table.table.update(HANDLERS)
        return
    for kind in kinds:
        table.register(kind, HANDLERS[kind])
