"""Decides what attaching to an instance means, given what the store holds: start, attach, return, or rewind."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from durabletask._attach.fingerprint import Fingerprint
from durabletask._errors import DurableTaskError

# Status names as the client's OrchestrationStatus enum spells them.
_IN_FLIGHT = {"RUNNING", "PENDING", "SUSPENDED", "CONTINUED_AS_NEW"}


class FingerprintMismatchError(DurableTaskError):
    """The instance was started for a different orchestrator, version, input or code than the attach asks for."""

    def __init__(self, instance_id: str, differences: list[str]) -> None:
        listing = "; ".join(differences)
        super().__init__(f"instance '{instance_id}' does not match this run: {listing}")
        self.instance_id = instance_id
        self.differences = differences


class AttachedInstanceFailedError(DurableTaskError):
    """The instance to attach to has already failed or was terminated, and no rewind was asked for."""

    def __init__(self, instance_id: str, status: str, detail: str | None) -> None:
        hint = " (pass rewind_if_failed=True to rewind it)" if status == "FAILED" else ""
        super().__init__(f"instance '{instance_id}' is {status}{': ' + detail if detail else ''}{hint}")
        self.instance_id = instance_id
        self.status = status


class AttachAction(Enum):
    """What an attach did."""

    STARTED = "started"
    ATTACHED = "attached"
    ALREADY_COMPLETED = "already_completed"
    REWOUND = "rewound"


@dataclass(frozen=True)
class AttachPlan:
    action: AttachAction


def plan_attach(instance_id: str, state: Any | None, wanted: Fingerprint, *, rewind_if_failed: bool) -> AttachPlan:
    """Chooses the attach action for ``state`` (an ``OrchestrationState`` or ``None``); raises when it can't attach."""
    if state is None:
        return AttachPlan(AttachAction.STARTED)
    recorded = Fingerprint.from_tags(getattr(state, "_fingerprint_tags", None))
    if recorded is None:
        raise FingerprintMismatchError(
            instance_id,
            ["no fingerprint is recorded on the instance (it was not started by attach or schedule_new_orchestration)"],
        )
    differences = wanted.differences(recorded)
    if differences:
        raise FingerprintMismatchError(instance_id, differences)
    status = state.runtime_status.name
    if status in _IN_FLIGHT:
        return AttachPlan(AttachAction.ATTACHED)
    if status == "COMPLETED":
        return AttachPlan(AttachAction.ALREADY_COMPLETED)
    if status == "FAILED" and rewind_if_failed:
        return AttachPlan(AttachAction.REWOUND)
    failure = getattr(state, "failure_details", None)
    detail = f"{failure.error_type}: {failure.message}" if failure is not None else None
    raise AttachedInstanceFailedError(instance_id, status, detail)
