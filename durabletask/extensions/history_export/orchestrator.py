"""The orchestration that drives one export job: list a page, export it, checkpoint, repeat.

Each cycle first asks the entity for the job's status (so a delete or an outside ``mark_failed`` stops the job),
then lists one page of terminal instances, exports them with at most ``max_parallel_exports`` activities at a
time, retries the failed ones after a back-off, and commits the page's counters and resume key to the entity.
Every :data:`CONTINUE_AS_NEW_FREQUENCY` cycles it continues as new, so its own history stays small.

Exactly once: a page's counters are committed in the same orchestration step that saw its exports finish, and
an orchestration's steps are durable, so a worker that dies mid-page makes the new worker replay to that point
and re-run only the exports that had not reported; those rewrite the same file names (see
:func:`~.activities.blob_name_for`).

A batch job lists its closed window by instance ID. A continuous job cannot page one open window by ID: an
instance finishing later with a smaller ID would fall behind the cursor. It therefore sweeps closed windows
instead: ``[start, now - settle delay)`` paged to the end, then the next window from there, so every instance
finishing after the job started is listed in exactly one sweep.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from durabletask import task
from durabletask import worker as worker_module
from durabletask.extensions.history_export._constants import ENTITY_NAME, ORCHESTRATOR_NAME
from durabletask.extensions.history_export._internal import dt_from_iso, dt_to_iso
from durabletask.extensions.history_export._logging import logger
from durabletask.extensions.history_export.activities import (
    EXPORT_INSTANCE_HISTORY_ACTIVITY,
    LIST_TERMINAL_INSTANCES_ACTIVITY,
    build_list_activity_input,
)
from durabletask.extensions.history_export.entity import ExportJobEntity
from durabletask.extensions.history_export.models import ExportJobConfiguration, ExportJobStatus, ExportMode

EXPORT_ACTIVITY_RETRY_POLICY = task.RetryPolicy(
    first_retry_interval=timedelta(seconds=15),
    max_number_of_attempts=3,
    backoff_coefficient=2.0,
    max_retry_interval=timedelta(seconds=60),
)
"""Retries of one export activity that raised (3 attempts, 15 s then 30 s apart)."""

CONTINUE_AS_NEW_FREQUENCY = 5
"""Page cycles between two continue-as-new restarts."""

MAX_BATCH_RETRY_ATTEMPTS = 3
"""Attempts at a page's exports before the job fails with the instances that still failed."""

CONTINUOUS_IDLE_DELAY = timedelta(minutes=1)
"""How long a continuous job sleeps once it has caught up."""

CONTINUOUS_SETTLE_DELAY = timedelta(seconds=5)
"""How far behind the present a continuous sweep ends, so that completions being committed are not missed."""

_BATCH_RETRY_FIRST = timedelta(seconds=60)
_BATCH_RETRY_MAX = timedelta(seconds=300)

# Tests set these to shorten the waits; they must be set in the worker's process.
_BATCH_RETRY_BACKOFF_OVERRIDE: timedelta | None = None
_CONTINUOUS_IDLE_DELAY_OVERRIDE: timedelta | None = None
_CONTINUOUS_SETTLE_DELAY_OVERRIDE: timedelta | None = None


def _batch_retry_delay(attempt: int) -> timedelta:
    if _BATCH_RETRY_BACKOFF_OVERRIDE is not None:
        return _BATCH_RETRY_BACKOFF_OVERRIDE
    delay: timedelta = _BATCH_RETRY_FIRST * 2 ** (attempt - 1)
    return min(delay, _BATCH_RETRY_MAX)


def _continuous_idle_delay() -> timedelta:
    return _CONTINUOUS_IDLE_DELAY_OVERRIDE or CONTINUOUS_IDLE_DELAY


def _continuous_settle_delay() -> timedelta:
    return (
        _CONTINUOUS_SETTLE_DELAY_OVERRIDE if _CONTINUOUS_SETTLE_DELAY_OVERRIDE is not None else CONTINUOUS_SETTLE_DELAY
    )


def _utc(moment: datetime) -> datetime:
    # The orchestration clock is naive UTC; the job's window is aware.
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


@dataclass
class _Cursor:
    """Where the job is; carried across continue-as-new in the orchestration input."""

    token: str | None
    window_from: datetime
    window_to: datetime | None
    totals: dict[str, int] = field(default_factory=dict)

    def to_input(self, job_id: str, config: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "job_id": job_id,
            "config": dict(config),
            "checkpoint": {"last_instance_key": self.token},
            "totals": dict(self.totals),
            "processed_cycles": 0,
            "window_from": dt_to_iso(self.window_from),
            "window_to": dt_to_iso(self.window_to),
        }


def _cursor_from_input(input: Mapping[str, Any], config: ExportJobConfiguration) -> _Cursor:
    checkpoint = input.get("checkpoint") or {}
    raw_totals = input.get("totals")
    totals: Mapping[str, Any] = raw_totals if isinstance(raw_totals, Mapping) else {}
    window_from = dt_from_iso(input.get("window_from")) or config.filter.completed_time_from
    window_to = dt_from_iso(input.get("window_to")) if "window_from" in input else config.filter.completed_time_to
    return _Cursor(
        token=checkpoint.get("last_instance_key"),
        window_from=window_from,
        window_to=window_to,
        totals={k: int(totals.get(k, 0)) for k in ("scanned", "exported", "failed")},
    )


def export_job_orchestrator(ctx: task.OrchestrationContext, input: Mapping[str, Any]) -> Generator[Any, Any, Any]:
    """Drives one export job.

    Input: ``job_id``, ``config`` (:meth:`ExportJobConfiguration.to_dict`) and, after a continue-as-new,
    ``checkpoint``, ``totals``, ``processed_cycles`` and the continuous sweep window.

    Args:
        ctx: The orchestration context.
        input: The job and where it has got to.

    Raises:
        TypeError: ``config`` is not a mapping.
    """
    job_id = str(input["job_id"])
    config_data = input["config"]
    if not isinstance(config_data, Mapping):
        raise TypeError("config input must be a mapping")
    config = ExportJobConfiguration.from_dict(config_data)
    cursor = _cursor_from_input(input, config)
    entity_id = task.EntityInstanceId(ENTITY_NAME, job_id)
    log = ctx.create_replay_safe_logger(logger)
    cycles = int(input.get("processed_cycles", 0))
    try:
        while True:
            cycles += 1
            if cycles > CONTINUE_AS_NEW_FREQUENCY:
                ctx.continue_as_new(cursor.to_input(job_id, config_data))
                return None
            current = yield ctx.call_entity(entity_id, ExportJobEntity.OP_GET)
            status = None if current is None else current.get("status")
            if status != ExportJobStatus.ACTIVE.value:
                log.info("Export job %r is %s; its orchestration stops", job_id, status or "deleted")
                return {"job_id": job_id, "status": status or "Cancelled", "totals": cursor.totals}
            outcome = yield from _one_cycle(ctx, entity_id, config, cursor)
            if outcome == "failed":
                log.warning("Export job %r failed after %d attempts at a page", job_id, MAX_BATCH_RETRY_ATTEMPTS)
                return {"job_id": job_id, "status": ExportJobStatus.FAILED.value, "totals": cursor.totals}
            if outcome == "done":
                break
        # call_entity (not signal) so that a caller waiting on the job sees COMPLETED once this returns.
        yield ctx.call_entity(entity_id, ExportJobEntity.OP_MARK_COMPLETED)
        return {"job_id": job_id, "status": ExportJobStatus.COMPLETED.value, "totals": cursor.totals}
    except Exception as ex:
        # A signal, not a call: if the entity is what failed, calling it again would only hide the cause.
        ctx.signal_entity(entity_id, ExportJobEntity.OP_MARK_FAILED, {"reason": f"{type(ex).__name__}: {ex}"})
        raise


def _one_cycle(
    ctx: task.OrchestrationContext, entity_id: task.EntityInstanceId, config: ExportJobConfiguration, cursor: _Cursor
) -> Generator[Any, Any, str]:
    """Lists and exports one page; returns ``"more"``, ``"done"`` (a batch job finished) or ``"failed"``."""
    continuous = config.mode is ExportMode.CONTINUOUS
    if continuous and cursor.window_to is None:
        window_to = _utc(ctx.current_utc_datetime) - _continuous_settle_delay()
        if window_to <= cursor.window_from:
            yield ctx.create_timer(ctx.current_utc_datetime + _continuous_idle_delay())
            return "more"
        cursor.window_to = window_to
    list_input = build_list_activity_input(
        runtime_status_names=[s.name for s in config.filter.effective_runtime_status()],
        completed_time_from=cursor.window_from,
        completed_time_to=cursor.window_to,
        page_size=config.max_instances_per_batch,
        continuation_token=cursor.token,
    )
    page = yield ctx.call_activity(LIST_TERMINAL_INSTANCES_ACTIVITY, input=list_input)
    instance_ids = [str(i) for i in page.get("instance_ids") or []]
    next_token = page.get("continuation_token") or None
    failures: list[dict[str, Any]] = []
    exported = 0
    if instance_ids:
        exported, failures = yield from _export_page(ctx, instance_ids, config)
    if failures:
        yield ctx.call_entity(
            entity_id,
            ExportJobEntity.OP_COMMIT_CHECKPOINT,
            {
                "scanned_delta": 0,
                "exported_delta": 0,
                "failed_delta": len(failures),
                "failures": failures,
                "mark_failed_on_batch": True,
            },
        )
        _add(cursor.totals, len(instance_ids), exported, len(failures))
        return "failed"
    cursor.token = next_token
    yield ctx.call_entity(
        entity_id,
        ExportJobEntity.OP_COMMIT_CHECKPOINT,
        {
            "scanned_delta": len(instance_ids),
            "exported_delta": exported,
            "failed_delta": 0,
            "last_instance_key": next_token,
        },
    )
    _add(cursor.totals, len(instance_ids), exported, 0)
    if next_token is not None:
        return "more"
    if not continuous:
        return "done"
    # The sweep reached the end of its window: the next one starts where this one ended.
    cursor.window_from, cursor.window_to = cursor.window_to or cursor.window_from, None
    yield ctx.create_timer(ctx.current_utc_datetime + _continuous_idle_delay())
    return "more"


def _add(totals: dict[str, int], scanned: int, exported: int, failed: int) -> None:
    totals["scanned"] = totals.get("scanned", 0) + scanned
    totals["exported"] = totals.get("exported", 0) + exported
    totals["failed"] = totals.get("failed", 0) + failed


def _export_page(
    ctx: task.OrchestrationContext, instance_ids: list[str], config: ExportJobConfiguration
) -> Generator[Any, Any, tuple[int, list[dict[str, Any]]]]:
    """Exports a page, retrying the instances that failed; returns the number exported and the final failures."""
    pending = list(instance_ids)
    exported = 0
    errors: dict[str, str] = {}
    for attempt in range(1, MAX_BATCH_RETRY_ATTEMPTS + 1):
        results = yield from _run_exports(ctx, pending, config)
        exported += sum(1 for r in results if r.get("success"))
        errors = {
            str(r["instance_id"]): str(r.get("error") or "Unknown error") for r in results if not r.get("success")
        }
        pending = [i for i in pending if i in errors]
        if not pending:
            return exported, []
        if attempt < MAX_BATCH_RETRY_ATTEMPTS:
            yield ctx.create_timer(ctx.current_utc_datetime + _batch_retry_delay(attempt))
    when = ctx.current_utc_datetime.isoformat()
    failures = [
        {"instance_id": i, "reason": errors[i], "attempt_count": MAX_BATCH_RETRY_ATTEMPTS, "last_attempt": when}
        for i in pending
    ]
    return exported, failures


def _run_exports(
    ctx: task.OrchestrationContext, instance_ids: list[str], config: ExportJobConfiguration
) -> Generator[Any, Any, list[dict[str, Any]]]:
    """Runs the export activities, at most ``max_parallel_exports`` at a time."""
    activity_input = {"format": config.format.to_dict(), "destination": config.destination.to_dict()}
    results: list[dict[str, Any]] = []
    step = config.max_parallel_exports
    for start in range(0, len(instance_ids), step):
        calls = [
            ctx.call_activity(
                EXPORT_INSTANCE_HISTORY_ACTIVITY,
                input={"instance_id": instance_id, **activity_input},
                retry_policy=EXPORT_ACTIVITY_RETRY_POLICY,
            )
            for instance_id in instance_ids[start : start + step]
        ]
        results.extend((yield task.when_all(calls)))
    return results


def register(worker_instance: worker_module.TaskHubGrpcWorker) -> None:
    """Adds :func:`export_job_orchestrator` to ``worker_instance``.

    Args:
        worker_instance: The worker, not started yet.
    """
    worker_instance.add_orchestrator(export_job_orchestrator)


__all__ = [
    "CONTINUE_AS_NEW_FREQUENCY",
    "CONTINUOUS_IDLE_DELAY",
    "CONTINUOUS_SETTLE_DELAY",
    "EXPORT_ACTIVITY_RETRY_POLICY",
    "MAX_BATCH_RETRY_ATTEMPTS",
    "ORCHESTRATOR_NAME",
    "export_job_orchestrator",
    "register",
]
