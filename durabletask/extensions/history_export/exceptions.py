"""Errors of the history-export extension.

Each also derives from the closest built-in error (``ValueError``, ``LookupError``), so code that already
catches those keeps catching them.
"""

from __future__ import annotations


class ExportJobError(Exception):
    """Base of every export-job error; ``job_id`` names the job when one is known."""

    def __init__(self, message: str, *, job_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id


class ExportJobInvalidTransitionError(ExportJobError, ValueError):
    """An entity operation asked for a status change the job's lifecycle does not allow."""

    def __init__(
        self, operation: str, from_status: str | None, to_status: str | None, *, job_id: str | None = None
    ) -> None:
        super().__init__(
            f"Operation {operation!r} cannot transition export job {job_id!r} from {from_status!r} to {to_status!r}",
            job_id=job_id,
        )
        self.operation = operation
        self.from_status = from_status
        self.to_status = to_status


class ExportJobNotFoundError(ExportJobError, LookupError):
    """No export job has the given ID."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"Export job {job_id!r} was not found", job_id=job_id)


__all__ = ["ExportJobError", "ExportJobInvalidTransitionError", "ExportJobNotFoundError"]
