"""An orchestration's critical section: which entities it locks, which are free to call, and the rules for entering.

``OrchestrationEntityContext`` is the name and interface of Microsoft's class for this bookkeeping (exported from
``durabletask.worker``); the orchestration runtime uses it for every entity call, signal and lock request, so its
checks and their messages are the ones an orchestrator's code meets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from google.protobuf import wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.entities.entity_instance_id import EntityInstanceId

__all__ = ["OrchestrationEntityContext"]


class OrchestrationEntityContext:
    """The critical-section state of one orchestration execution.

    Each ``validate_*`` method answers ``(allowed, reason)``; the caller raises ``RuntimeError(reason)``
    when a request is not allowed (as both SDKs do). Between a lock request and its grant,
    ``lock_acquisition_pending`` is true; after the grant every locked entity is available to call, and a
    call makes its entity unavailable until the call returns.

    Attributes:
        instance_id: The orchestration instance.
        lock_acquisition_pending: A lock request was sent and not yet granted.
        critical_section_id: The ID of the critical section, ``None`` outside one.
        critical_section_locks: The entities the section locks, in lock order.
        available_locks: The locked entities no call is currently waiting on.
    """

    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id
        self.lock_acquisition_pending = False
        self.critical_section_id: str | None = None
        self.critical_section_locks: list[EntityInstanceId] = []
        self.available_locks: list[EntityInstanceId] = []

    @property
    def is_inside_critical_section(self) -> bool:
        """Whether the orchestration holds (or is acquiring) entity locks."""
        return self.critical_section_id is not None

    def get_available_entities(self) -> Iterator[EntityInstanceId]:
        """The locked entities that can be called now (none outside a critical section)."""
        if self.is_inside_critical_section:
            yield from list(self.available_locks)

    def validate_suborchestration_transition(self) -> tuple[bool, str]:
        """Whether a sub-orchestration may be started now (not while holding locks)."""
        if self.is_inside_critical_section:
            return False, "While holding locks, cannot call suborchestrators."
        return True, ""

    def validate_operation_transition(self, target_instance_id: EntityInstanceId, one_way: bool) -> tuple[bool, str]:
        """Whether ``target_instance_id`` may be signalled (``one_way``) or called now; a call allowed inside a
        critical section takes the entity out of the available ones until :meth:`recover_lock_after_call`."""
        if not self.is_inside_critical_section:
            return True, ""
        if one_way:
            if target_instance_id in self.critical_section_locks:
                return False, "Must not signal a locked entity from a critical section."
            return True, ""
        if target_instance_id in self.available_locks:
            self.available_locks.remove(target_instance_id)
            return True, ""
        if self.lock_acquisition_pending:
            return False, "Must await the completion of the lock request prior to calling any entity."
        if target_instance_id in self.critical_section_locks:
            return False, (
                "Must not call an entity from a critical section while a prior call to the same entity is still "
                "pending."
            )
        return False, "Must not call an entity from a critical section if it is not one of the locked entities."

    def validate_acquire_transition(self) -> tuple[bool, str]:
        """Whether a new critical section may be entered now (sections do not nest)."""
        if self.is_inside_critical_section:
            return False, "Must not enter another critical section from within a critical section."
        return True, ""

    def recover_lock_after_call(self, target_instance_id: EntityInstanceId) -> None:
        """A call to ``target_instance_id`` returned inside the critical section: it can be called again."""
        if self.is_inside_critical_section:
            self.available_locks.append(target_instance_id)

    def emit_acquire_message(
        self, critical_section_id: str, entities: Iterable[EntityInstanceId]
    ) -> tuple[pb.SendEntityMessageAction, pb.OrchestrationInstance] | tuple[None, None]:
        """Enter a critical section locking ``entities`` (sorted, without duplicates, to avoid deadlocks).

        Returns the lock request and the entity it is sent to first, or ``(None, None)`` for no entities.
        """
        locks = sorted(set(entities))
        if not locks:
            return None, None
        request = pb.SendEntityMessageAction(
            entityLockRequested=pb.EntityLockRequestedEvent(
                criticalSectionId=critical_section_id,
                parentInstanceId=_string(self.instance_id),
                lockSet=[str(lock) for lock in locks],
                position=0,
            )
        )
        self.critical_section_id = critical_section_id
        self.critical_section_locks = locks
        self.lock_acquisition_pending = True
        return request, pb.OrchestrationInstance(instanceId=str(locks[0]))

    def complete_acquire(self, critical_section_id: str) -> None:
        """The locks of ``critical_section_id`` were granted: every locked entity can be called.

        Raises:
            RuntimeError: the grant is for another critical section than the current one.
        """
        if self.critical_section_id != critical_section_id:
            raise RuntimeError(
                f"Unexpected lock acquire for critical section ID '{critical_section_id}' "
                f"(expected '{self.critical_section_id}')"
            )
        # A copy: a call taking an entity out of the available ones must not take it out of the locks, which
        # are all released when the section ends (Microsoft's class shares one list for both; see
        # docs/conformance.md).
        self.available_locks = list(self.critical_section_locks)
        self.lock_acquisition_pending = False

    def emit_lock_release_messages(self) -> Iterator[pb.SendEntityMessageAction]:
        """Leave the critical section: one unlock message per locked entity, then the state is cleared."""
        if not self.is_inside_critical_section:
            return
        section_id, locks = self.critical_section_id, self.critical_section_locks
        self.critical_section_locks = []
        self.available_locks = []
        self.critical_section_id = None
        self.lock_acquisition_pending = False
        for entity_id in locks:
            yield pb.SendEntityMessageAction(
                entityUnlockSent=pb.EntityUnlockSentEvent(
                    criticalSectionId=section_id,
                    targetInstanceId=_string(str(entity_id)),
                    parentInstanceId=_string(self.instance_id),
                )
            )


def _string(value: str) -> wrappers_pb2.StringValue:
    return wrappers_pb2.StringValue(value=value)
