"""The export-job lifecycle: which operation may move a job from which status to which."""

from __future__ import annotations

import itertools

import pytest

from durabletask.extensions.history_export import ExportJobInvalidTransitionError, ExportJobStatus
from durabletask.extensions.history_export.transitions import assert_valid_transition, is_valid_transition

A, C, F = ExportJobStatus.ACTIVE, ExportJobStatus.COMPLETED, ExportJobStatus.FAILED
ALLOWED = {
    ("create", None, A),
    ("create", F, A),
    ("create", C, A),
    ("commit_checkpoint", A, A),
    ("commit_checkpoint", A, F),
    ("mark_completed", A, C),
    ("mark_failed", A, F),
    ("mark_failed", F, F),
}
OPERATIONS = ("create", "commit_checkpoint", "mark_completed", "mark_failed", "get", "delete")


@pytest.mark.parametrize(
    ("operation", "current", "target"), list(itertools.product(OPERATIONS, (None, A, C, F), (A, C, F)))
)
def test_exactly_the_lifecycle_transitions_are_allowed(
    operation: str, current: ExportJobStatus | None, target: ExportJobStatus
) -> None:
    assert is_valid_transition(operation, current, target) == ((operation, current, target) in ALLOWED)


def test_an_invalid_transition_names_the_job_operation_and_statuses() -> None:
    with pytest.raises(ExportJobInvalidTransitionError) as raised:
        assert_valid_transition("create", A, A, job_id="j7")
    error = raised.value
    assert isinstance(error, ValueError)
    assert (error.operation, error.from_status, error.to_status, error.job_id) == ("create", "Active", "Active", "j7")
    assert str(error) == "Operation 'create' cannot transition export job 'j7' from 'Active' to 'Active'"
