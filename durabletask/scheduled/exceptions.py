"""Errors of the scheduled-tasks feature, under one base class."""

from __future__ import annotations

from durabletask._errors import DurableTaskError

__all__ = [
    "ScheduleClientValidationError",
    "ScheduleError",
    "ScheduleInvalidTransitionError",
    "ScheduleNotFoundError",
]


class ScheduleError(DurableTaskError):
    """Base class of every scheduled-task error (under the SDK's root ``DurableTaskError``)."""


class ScheduleNotFoundError(ScheduleError):
    """No schedule exists with the requested ID."""

    def __init__(self, schedule_id: str) -> None:
        self.schedule_id = schedule_id
        super().__init__(f"Schedule with ID '{schedule_id}' was not found.")


class ScheduleClientValidationError(ScheduleError):
    """A schedule operation was refused by the client before anything was sent."""

    def __init__(self, schedule_id: str, message: str) -> None:
        self.schedule_id = schedule_id
        super().__init__(f"Validation failed for schedule '{schedule_id}': {message}")


class ScheduleInvalidTransitionError(ScheduleError):
    """The operation is not allowed in the schedule's current status (e.g. pausing a paused schedule)."""

    def __init__(self, schedule_id: str, from_status: object, to_status: object, operation_name: str) -> None:
        self.schedule_id = schedule_id
        self.from_status = from_status
        self.to_status = to_status
        self.operation_name = operation_name
        # The text is what a client of either SDK reads back from the failed operation, so its shape is kept.
        super().__init__(
            f"Invalid state transition for schedule '{schedule_id}': operation "
            f"'{operation_name}' cannot transition from '{_text(from_status)}' to '{_text(to_status)}'."
        )


def _text(status: object) -> str:
    value = getattr(status, "value", status)
    return str(value)
