"""The durable entity holding one export job's state; its key is the job ID.

The state is :class:`~.models.ExportJobState` in its stored form (plain JSON with a schema version). Operations:

``create``
    Starts a new job, or starts a finished one over: stores ACTIVE with fresh counters and starts the driving
    orchestration (instance ID ``export-job-<job ID>``) in the same step, so one signal launches a job. An ACTIVE
    job cannot be created again (:class:`~.exceptions.ExportJobInvalidTransitionError`).
``get``
    The stored state, or ``None`` when there is none.
``commit_checkpoint``
    Adds one page's counters and moves the resume key; with ``mark_failed_on_batch`` and failures, fails the job.
``mark_completed`` / ``mark_failed``
    Ends the job (``mark_failed`` records ``reason``).
``delete``
    Removes the state.

Checkpoints and endings that arrive after a delete do nothing: the orchestration may still be finishing a step.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from durabletask import entities
from durabletask import worker as worker_module
from durabletask.extensions.history_export._constants import (
    ENTITY_NAME,
    ORCHESTRATOR_INSTANCE_ID_PREFIX,
    ORCHESTRATOR_NAME,
    orchestrator_instance_id_for,
)
from durabletask.extensions.history_export._internal import dt_from_iso
from durabletask.extensions.history_export._logging import logger
from durabletask.extensions.history_export.models import (
    ExportFailure,
    ExportJobConfiguration,
    ExportJobState,
    ExportJobStatus,
)
from durabletask.extensions.history_export.transitions import assert_valid_transition

_FAILURES_IN_SUMMARY = 10


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _summary(failures: list[ExportFailure]) -> str:
    text = "; ".join(f"{f.instance_id}: {f.reason}" for f in failures[:_FAILURES_IN_SUMMARY])
    if len(failures) > _FAILURES_IN_SUMMARY:
        text += f"; ... and {len(failures) - _FAILURES_IN_SUMMARY} more failures"
    return text


def _count(payload: Mapping[str, Any], name: str) -> int:
    value = int(payload.get(name, 0))
    if value < 0:
        raise ValueError(f"checkpoint deltas must be non-negative; got {name}={value}")
    return value


class ExportJobEntity(entities.DurableEntity):
    """The lifecycle state of one export job."""

    OP_CREATE = "create"
    OP_GET = "get"
    OP_COMMIT_CHECKPOINT = "commit_checkpoint"
    OP_MARK_COMPLETED = "mark_completed"
    OP_MARK_FAILED = "mark_failed"
    OP_DELETE = "delete"

    def _load(self) -> ExportJobState | None:
        raw = self.get_state()
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise TypeError(f"Unexpected entity state type {type(raw).__name__!r}; expected dict")
        return ExportJobState.from_dict(raw)

    def _save(self, state: ExportJobState) -> dict[str, Any]:
        state.last_modified_at = _now()
        stored = state.to_dict()
        self.set_state(stored)
        return stored

    def _job_id(self) -> str:
        return self.entity_context.entity_id.key

    def create(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Operation ``create``: starts the job over with the configuration in ``payload`` and makes it ACTIVE.

        Counters, checkpoint, failures and error start again from nothing, also for a job created before.

        Args:
            payload: ``{"config": <ExportJobConfiguration as a dict>, "created_at": <ISO time, optional>}``.

        Returns:
            The job's new state, as a dict.

        Raises:
            ValueError: ``config`` is missing, empty or invalid.
            ExportJobInvalidTransitionError: The job is ACTIVE already.
        """
        job_id = self._job_id()
        current = self._load()
        assert_valid_transition(
            self.OP_CREATE, None if current is None else current.status, ExportJobStatus.ACTIVE, job_id=job_id
        )
        config_data = payload.get("config")
        if config_data is None:
            raise ValueError("create payload requires 'config'")
        if not isinstance(config_data, Mapping) or not config_data:
            raise ValueError("create payload 'config' must be a non-empty mapping")
        config = ExportJobConfiguration.from_dict(config_data)
        created_at = dt_from_iso(payload.get("created_at") or None) or _now()
        # A job created again starts over: counters, checkpoint, failures and error are all new.
        state = ExportJobState.new(config, created_at=created_at)
        instance_id = orchestrator_instance_id_for(job_id)
        try:
            self.entity_context.schedule_new_orchestration(
                ORCHESTRATOR_NAME, input={"job_id": job_id, "config": config.to_dict()}, instance_id=instance_id
            )
            state.orchestrator_instance_id = instance_id
            logger.info("Created export job %r; its orchestration is %s", job_id, instance_id)
        except Exception as ex:
            state.status = ExportJobStatus.FAILED
            state.last_error = f"Failed to schedule orchestrator: {type(ex).__name__}: {ex}"
            logger.exception("Could not start the orchestration of export job %r", job_id)
        return self._save(state)

    def get(self, _: Any = None) -> dict[str, Any] | None:
        """Operation ``get``: the job's state as a dict, or ``None`` if it was never created or was deleted.

        Args:
            _: Ignored; the operation takes no input.
        """
        state = self._load()
        return None if state is None else state.to_dict()

    def commit_checkpoint(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """Operation ``commit_checkpoint``: adds one page's counts and failures to the job and moves its checkpoint.

        Args:
            payload: ``scanned_delta``, ``exported_delta`` and ``failed_delta`` counts, ``failures`` (dicts of
                :class:`ExportFailure`), the new ``last_instance_key``, and ``mark_failed_on_batch`` (a page with
                failures then fails the job).

        Returns:
            The job's new state, or ``None`` if the job does not exist.

        Raises:
            ExportJobInvalidTransitionError: The job is not ACTIVE.
        """
        state = self._load()
        if state is None:
            return None
        job_id = self._job_id()
        scanned, exported, failed = (_count(payload, n) for n in ("scanned_delta", "exported_delta", "failed_delta"))
        new_failures = [ExportFailure.from_dict(f) for f in payload.get("failures") or []]
        fails_job = bool(payload.get("mark_failed_on_batch")) and bool(new_failures)
        target = ExportJobStatus.FAILED if fails_job else ExportJobStatus.ACTIVE
        assert_valid_transition(self.OP_COMMIT_CHECKPOINT, state.status, target, job_id=job_id)
        state.scanned_instances += scanned
        state.exported_instances += exported
        state.failed_instances += failed
        if "last_instance_key" in payload:
            state.checkpoint.last_instance_key = payload.get("last_instance_key")
        state.last_checkpoint_time = dt_from_iso(payload.get("checkpoint_time") or None) or _now()
        state.failures.extend(new_failures)
        if fails_job:
            state.status = ExportJobStatus.FAILED
            state.last_error = f"Batch export failed after retries. Failures: {_summary(new_failures)}"
            logger.warning("Export job %r failed: %d instances could not be exported", job_id, len(new_failures))
        return self._save(state)

    def mark_completed(self, _: Any = None) -> dict[str, Any] | None:
        """Operation ``mark_completed``: the job is COMPLETED and its last error cleared.

        Args:
            _: Ignored; the operation takes no input.

        Returns:
            The job's new state, or ``None`` if the job does not exist.

        Raises:
            ExportJobInvalidTransitionError: The job is not ACTIVE.
        """
        state = self._load()
        if state is None:
            return None
        assert_valid_transition(self.OP_MARK_COMPLETED, state.status, ExportJobStatus.COMPLETED, job_id=self._job_id())
        state.status = ExportJobStatus.COMPLETED
        state.last_error = None
        logger.info("Export job %r completed", self._job_id())
        return self._save(state)

    def mark_failed(self, payload: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """Operation ``mark_failed``: the job is FAILED, with ``payload["reason"]`` as its last error.

        A job that failed already keeps its first reason, the one that explains the failure.

        Args:
            payload: ``{"reason": ...}``; no reason when ``None``.

        Returns:
            The job's new state, or ``None`` if the job does not exist.

        Raises:
            ExportJobInvalidTransitionError: The job is COMPLETED.
        """
        state = self._load()
        if state is None:
            return None
        assert_valid_transition(self.OP_MARK_FAILED, state.status, ExportJobStatus.FAILED, job_id=self._job_id())
        if state.status is ExportJobStatus.FAILED:
            # Already failed: keep the first reason, which is the one that explains the failure.
            return state.to_dict()
        reason = "" if payload is None else str(payload.get("reason", ""))
        state.status = ExportJobStatus.FAILED
        state.last_error = reason or None
        logger.info("Export job %r failed: %s", self._job_id(), reason or "(no reason)")
        return self._save(state)

    def delete(self, input: Any = None) -> None:
        logger.info("Export job %r deleted", self._job_id())
        super().delete(input)


def register(worker_instance: worker_module.TaskHubGrpcWorker, *, name: str = ENTITY_NAME) -> None:
    """Adds :class:`ExportJobEntity` to ``worker_instance`` under ``name``.

    Args:
        worker_instance: The worker, not started yet.
        name: The entity name to register under (``ExportJobEntity`` by default, as in Microsoft's extension).
    """
    worker_instance.add_entity(ExportJobEntity, name=name)


__all__ = [
    "ENTITY_NAME",
    "ORCHESTRATOR_INSTANCE_ID_PREFIX",
    "ExportJobEntity",
    "orchestrator_instance_id_for",
    "register",
]
