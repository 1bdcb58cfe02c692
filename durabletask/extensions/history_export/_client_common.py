"""What the synchronous and asynchronous export clients share: request building and reading replies.

Keeping it here leaves each client a thin layer of calls, so the two cannot drift apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timezone

import grpc

from durabletask import client as client_module
from durabletask import entities
from durabletask.extensions.history_export._constants import ENTITY_NAME, orchestrator_instance_id_for
from durabletask.extensions.history_export._logging import logger
from durabletask.extensions.history_export.models import (
    ExportJobConfiguration,
    ExportJobCreationOptions,
    ExportJobDescription,
    ExportJobQuery,
    ExportJobStatus,
)
from durabletask.extensions.history_export.transitions import is_valid_transition

TERMINAL_JOB_STATUSES = frozenset({ExportJobStatus.COMPLETED, ExportJobStatus.FAILED})
ENTITY_ID_PREFIX = f"@{ENTITY_NAME.lower()}@"

DELETE_WAIT_TIMEOUT_SECONDS = 30.0
"""How long deleting a job waits for its orchestration to stop before purging it anyway."""


def entity_id(job_id: str) -> entities.EntityInstanceId:
    if not job_id:
        raise ValueError("job_id must be a non-empty string")
    return entities.EntityInstanceId(ENTITY_NAME, job_id)


class JobHandle:
    """What both job clients know of their job: its ID and the instances that hold it."""

    def __init__(self, job_id: str) -> None:
        if not job_id:
            raise ValueError("job_id must be a non-empty string")
        self._job_id = job_id

    @property
    def job_id(self) -> str:
        return self._job_id

    @property
    def orchestrator_instance_id(self) -> str:
        return orchestrator_instance_id_for(self._job_id)


def is_not_found(ex: grpc.RpcError) -> bool:
    """Whether a gRPC error is NOT_FOUND (``code`` lives on ``grpc.Call``, not on every ``RpcError``)."""
    code = getattr(ex, "code", None)
    try:
        return callable(code) and code() == grpc.StatusCode.NOT_FOUND
    except Exception:
        return False


class NewJob:
    """A job about to be created: its ID, validated configuration and the ``create`` operation's input."""

    def __init__(self, options: ExportJobCreationOptions, job_id: str | None) -> None:
        self.config: ExportJobConfiguration = options.to_configuration()
        self.job_id = job_id or uuid.uuid4().hex
        self.entity_id = entity_id(self.job_id)
        self.created_at = datetime.now(timezone.utc)
        self.operation_input = {"config": self.config.to_dict(), "created_at": self.created_at.isoformat()}

    def warn_if_active(self, existing: ExportJobDescription | None) -> None:
        """Warns that a create over a job still ACTIVE changes nothing, as Microsoft's client does not raise.

        The entity refuses such a create inside a signal nobody waits on, so the job keeps its configuration; an
        application that creates its job at every start (as with Microsoft's SDK) must keep working, so this only
        says so in the log.
        """
        current = None if existing is None else existing.status
        if not is_valid_transition("create", current, ExportJobStatus.ACTIVE):
            logger.warning(
                "export job %r is still %s: the job refuses a new create and keeps its configuration "
                "(delete or cancel it first to start it over)",
                self.job_id,
                None if current is None else current.value,
            )

    def description(self) -> ExportJobDescription:
        logger.info(
            "Submitted export job %r; its orchestration is %s", self.job_id, orchestrator_instance_id_for(self.job_id)
        )
        return ExportJobDescription(
            job_id=self.job_id,
            status=ExportJobStatus.ACTIVE,
            created_at=self.created_at,
            last_modified_at=self.created_at,
            config=self.config,
            orchestrator_instance_id=orchestrator_instance_id_for(self.job_id),
            scanned_instances=0,
            exported_instances=0,
            failed_instances=0,
            last_error=None,
            checkpoint=None,
            last_checkpoint_time=None,
        )


def description_of(job_id: str, meta: client_module.EntityMetadata | None) -> ExportJobDescription | None:
    """The job described by an entity's metadata, or ``None`` when the entity has no job state."""
    if meta is None:
        return None
    state = meta.get_typed_state()
    if not isinstance(state, dict) or not state:
        return None
    return ExportJobDescription.from_state_dict(job_id, state)


def entity_query(query: ExportJobQuery) -> client_module.EntityQuery:
    # The state is always needed: without it there is no status or progress to describe.
    return client_module.EntityQuery(
        instance_id_starts_with=ENTITY_ID_PREFIX,
        last_modified_from=query.last_modified_from,
        last_modified_to=query.last_modified_to,
        include_state=True,
        page_size=query.page_size,
    )


def listed_job(meta: client_module.EntityMetadata, query: ExportJobQuery) -> ExportJobDescription | None:
    """The job behind one listed entity if it is an export job matching ``query``; skipped entities are logged."""
    if meta.id.entity != ENTITY_NAME.lower():
        return None
    raw = meta.get_typed_state()
    if not isinstance(raw, Mapping) or not raw:
        logger.warning("list_jobs: skipping export-job entity %r: its state is empty or not an object", meta.id.key)
        return None
    try:
        desc = ExportJobDescription.from_state_dict(meta.id.key, raw)
    except (KeyError, ValueError, TypeError) as ex:
        logger.warning("list_jobs: skipping export-job entity %r: unreadable state (%s)", meta.id.key, ex)
        return None
    if query.status and desc.status not in query.status:
        return None
    return desc


def check_wait_arguments(timeout: float, poll_interval: float) -> None:
    if timeout <= 0:
        raise ValueError(f"timeout must be positive; got {timeout}")
    if poll_interval <= 0:
        raise ValueError(f"poll_interval must be positive; got {poll_interval}")


def timeout_message(job_id: str, timeout: float, last: ExportJobDescription) -> str:
    return f"Export job '{job_id}' did not reach a terminal status within {timeout}s (last status: {last.status.value})"
