"""Names shared by the export-job entity, its orchestrator and the clients.

They live apart so that the entity and the orchestrator can both import them without importing each other.
"""

from __future__ import annotations

ENTITY_NAME = "ExportJobEntity"
"""The name the export-job entity is registered under."""

ORCHESTRATOR_NAME = "export_job_orchestrator"
"""The name of the orchestration that drives one export job."""

ORCHESTRATOR_INSTANCE_ID_PREFIX = "export-job-"
"""Every driving orchestration's instance ID is this prefix followed by the job ID."""


def orchestrator_instance_id_for(job_id: str) -> str:
    """The instance ID of the orchestration driving ``job_id`` (one per job, so it can be found from the ID).

    Args:
        job_id: The job's ID.

    Raises:
        ValueError: ``job_id`` is empty.
    """
    if not job_id:
        raise ValueError("job_id must be a non-empty string")
    return ORCHESTRATOR_INSTANCE_ID_PREFIX + job_id
