"""The schedule entity's state-changing operations and the status changes each one may make."""

from __future__ import annotations

from durabletask.scheduled.schedule_status import ScheduleStatus

__all__ = ["CREATE_SCHEDULE", "PAUSE_SCHEDULE", "RESUME_SCHEDULE", "UPDATE_SCHEDULE", "is_valid_transition"]

# Entity operation names: also the method names of the schedule entity, and what clients of either SDK send.
CREATE_SCHEDULE = "create_schedule"
UPDATE_SCHEDULE = "update_schedule"
PAUSE_SCHEDULE = "pause_schedule"
RESUME_SCHEDULE = "resume_schedule"

_A, _P, _U = ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.UNINITIALIZED

# (from, to) pairs allowed per operation. Creating again re-creates (and re-activates) a schedule; an
# update keeps the status; pause and resume only flip between active and paused.
_ALLOWED: dict[str, frozenset[tuple[ScheduleStatus, ScheduleStatus]]] = {
    CREATE_SCHEDULE: frozenset({(_U, _A), (_A, _A), (_P, _A)}),
    UPDATE_SCHEDULE: frozenset({(_A, _A), (_P, _P)}),
    PAUSE_SCHEDULE: frozenset({(_A, _P)}),
    RESUME_SCHEDULE: frozenset({(_P, _A)}),
}


def is_valid_transition(operation_name: str, from_status: ScheduleStatus, target_status: ScheduleStatus) -> bool:
    """Whether ``operation_name`` may move a schedule from ``from_status`` to ``target_status``.

    An operation not in the table is never valid.

    Args:
        operation_name: The entity operation, e.g. ``"pause_schedule"``.
        from_status: The schedule's current status.
        target_status: The status the operation would move it to.
    """
    return (from_status, target_status) in _ALLOWED.get(operation_name, frozenset())
