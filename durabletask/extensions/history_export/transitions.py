"""Which entity operation may move an export job from which status to which.

``None`` as the current status means the entity has no state yet (a new job). The entity checks this table
before every operation that changes the status.
"""

from __future__ import annotations

from collections.abc import Mapping

from durabletask.extensions.history_export.exceptions import ExportJobInvalidTransitionError
from durabletask.extensions.history_export.models import ExportJobStatus

_ACTIVE = ExportJobStatus.ACTIVE
_COMPLETED = ExportJobStatus.COMPLETED
_FAILED = ExportJobStatus.FAILED

TRANSITIONS: Mapping[tuple[str, ExportJobStatus | None], frozenset[ExportJobStatus]] = {
    # Creating starts the driving orchestration at once, so a job is ACTIVE from its first state; a finished
    # job may be created again (it starts over), a running one may not.
    ("create", None): frozenset({_ACTIVE}),
    ("create", _FAILED): frozenset({_ACTIVE}),
    ("create", _COMPLETED): frozenset({_ACTIVE}),
    # A checkpoint keeps the job ACTIVE, or fails it when a page could not be exported after its retries.
    ("commit_checkpoint", _ACTIVE): frozenset({_ACTIVE, _FAILED}),
    ("mark_completed", _ACTIVE): frozenset({_COMPLETED}),
    # Failing twice is allowed (the second time changes nothing): failure reports are best effort and repeat.
    ("mark_failed", _ACTIVE): frozenset({_FAILED}),
    ("mark_failed", _FAILED): frozenset({_FAILED}),
}


def is_valid_transition(operation: str, from_status: ExportJobStatus | None, to_status: ExportJobStatus) -> bool:
    """Whether ``operation`` may take a job from ``from_status`` to ``to_status``.

    Args:
        operation: The entity operation, e.g. ``"mark_completed"``.
        from_status: The job's current status; ``None`` for a job that does not exist.
        to_status: The status the operation would set.
    """
    return to_status in TRANSITIONS.get((operation, from_status), frozenset())


def assert_valid_transition(
    operation: str, from_status: ExportJobStatus | None, to_status: ExportJobStatus, *, job_id: str | None = None
) -> None:
    """Raises :class:`ExportJobInvalidTransitionError` unless the transition is allowed.

    Args:
        operation: The entity operation.
        from_status: The job's current status; ``None`` for a job that does not exist.
        to_status: The status the operation would set.
        job_id: The job, named in the error.
    """
    if not is_valid_transition(operation, from_status, to_status):
        raise ExportJobInvalidTransitionError(
            operation=operation,
            from_status=None if from_status is None else from_status.value,
            to_status=to_status.value,
            job_id=job_id,
        )


__all__ = ["TRANSITIONS", "assert_valid_transition", "is_valid_transition"]
