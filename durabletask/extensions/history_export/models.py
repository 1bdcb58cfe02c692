"""The public data of the history-export extension: job options, configuration, persisted state and views.

Every type that crosses a durable boundary (entity state, orchestration and activity inputs) converts itself to
and from plain JSON data with ``to_dict`` / ``from_dict``, under literal field names and an explicit schema
version, so no class or module name is ever stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from durabletask.client import OrchestrationStatus
from durabletask.extensions.history_export._internal import dt_from_iso, dt_to_iso


class ExportMode(Enum):
    """Whether a job exports one closed time window or keeps following newly finished instances."""

    BATCH = "Batch"
    """Export the terminal instances of a closed completed-time window, then complete."""

    CONTINUOUS = "Continuous"
    """Keep exporting instances as they finish, until the job is deleted or failed from outside."""


class ExportFormatKind(Enum):
    """How one instance's history is laid out in its exported file."""

    JSON = "Json"
    """One uncompressed JSON document per instance."""

    JSONL_GZIP = "JsonlGzip"
    """Gzip-compressed JSON lines: a metadata line, then one line per history event."""


class ExportJobStatus(Enum):
    """Where an export job is in its lifecycle (the value is what the entity stores)."""

    ACTIVE = "Active"
    """Created; its orchestration is working through the instances."""

    COMPLETED = "Completed"
    """A batch job exported its whole window."""

    FAILED = "Failed"
    """The orchestration failed, or a page of exports still failed after its retries."""


_TERMINAL_RUNTIME_STATUSES: tuple[OrchestrationStatus, ...] = (
    OrchestrationStatus.COMPLETED,
    OrchestrationStatus.FAILED,
    OrchestrationStatus.TERMINATED,
)


def _parse_runtime_status(value: Any) -> OrchestrationStatus:
    """A runtime status from stored data: the wire number (as int or text) or, from older state, the name."""
    if isinstance(value, OrchestrationStatus):
        return value
    if isinstance(value, bool):
        raise TypeError("Cannot parse runtime status from value of type 'bool'")
    if isinstance(value, int):
        return OrchestrationStatus(value)
    if isinstance(value, str):
        try:
            return OrchestrationStatus(int(value))
        except ValueError:
            return OrchestrationStatus[value]
    raise TypeError(f"Cannot parse runtime status from value of type {type(value).__name__!r}")


@dataclass
class ExportFormat:
    """The file format of an export and the schema version written into every file."""

    kind: ExportFormatKind = ExportFormatKind.JSONL_GZIP
    schema_version: str = "1.0"

    def to_dict(self) -> dict[str, Any]:
        """This format as the plain dict the job entity stores: its kind and schema version."""
        return {"kind": self.kind.value, "schema_version": self.schema_version}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportFormat:
        """Reads what :meth:`to_dict` wrote.

        Args:
            data: The stored dict.

        Raises:
            KeyError: A required key is missing.
            ValueError: A value is malformed.
        """
        return cls(kind=ExportFormatKind(data["kind"]), schema_version=data.get("schema_version", "1.0"))


@dataclass
class ExportDestination:
    """Where the files go: a container (a blob container, or a folder for the local writer) and a name prefix."""

    container: str
    prefix: str | None = None

    def __post_init__(self) -> None:
        if not self.container:
            raise ValueError("destination.container must be a non-empty string")

    def to_dict(self) -> dict[str, Any]:
        """This destination as the plain dict the job entity stores: its container and prefix."""
        return {"container": self.container, "prefix": self.prefix}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportDestination:
        """Reads what :meth:`to_dict` wrote.

        Args:
            data: The stored dict.

        Raises:
            KeyError: A required key is missing.
            ValueError: A value is malformed.
        """
        return cls(container=data["container"], prefix=data.get("prefix"))


@dataclass
class ExportFilter:
    """Which instances a job exports.

    ``completed_time_from`` is inclusive and ``completed_time_to`` exclusive; ``runtime_status`` defaults to
    every terminal status (completed, failed, terminated).
    """

    completed_time_from: datetime
    completed_time_to: datetime | None = None
    runtime_status: list[OrchestrationStatus] | None = None

    def effective_runtime_status(self) -> list[OrchestrationStatus]:
        """The statuses to export, with the default applied."""
        return list(_TERMINAL_RUNTIME_STATUSES if self.runtime_status is None else self.runtime_status)

    def to_dict(self) -> dict[str, Any]:
        """This filter as the plain dict the job entity stores: its completed-time window and statuses (by wire
        number).
        """
        # Statuses are stored by wire number, which never changes, rather than by Python constant name.
        statuses = None if self.runtime_status is None else [s.value for s in self.runtime_status]
        return {
            "completed_time_from": dt_to_iso(self.completed_time_from),
            "completed_time_to": dt_to_iso(self.completed_time_to),
            "runtime_status": statuses,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportFilter:
        """Reads what :meth:`to_dict` wrote.

        Args:
            data: The stored dict.

        Raises:
            KeyError: A required key is missing.
            ValueError: A value is malformed.
        """
        completed_from = dt_from_iso(data.get("completed_time_from"))
        if completed_from is None:
            raise ValueError("completed_time_from is required")
        statuses = data.get("runtime_status")
        return cls(
            completed_time_from=completed_from,
            completed_time_to=dt_from_iso(data.get("completed_time_to")),
            runtime_status=None if statuses is None else [_parse_runtime_status(s) for s in statuses],
        )


@dataclass
class ExportCheckpoint:
    """Where a job resumes: the backend's continuation key after the last committed page (``None``: the start)."""

    last_instance_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """This checkpoint as the plain dict the job entity stores: the last instance key exported."""
        return {"last_instance_key": self.last_instance_key}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportCheckpoint:
        """Reads what :meth:`to_dict` wrote.

        Args:
            data: The stored dict.

        Raises:
            KeyError: A required key is missing.
            ValueError: A value is malformed.
        """
        return cls(last_instance_key=data.get("last_instance_key"))


@dataclass
class ExportFailure:
    """One instance whose history could not be exported, with the last reason."""

    instance_id: str
    reason: str
    attempt_count: int
    last_attempt: datetime

    def to_dict(self) -> dict[str, Any]:
        """This failure as the plain dict the job entity stores: the instance, the reason, the attempts and the last
        attempt's time.
        """
        return {
            "instance_id": self.instance_id,
            "reason": self.reason,
            "attempt_count": self.attempt_count,
            "last_attempt": dt_to_iso(self.last_attempt),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportFailure:
        """Reads what :meth:`to_dict` wrote.

        Args:
            data: The stored dict.

        Raises:
            KeyError: A required key is missing.
            ValueError: A value is malformed.
        """
        last_attempt = dt_from_iso(data["last_attempt"])
        if last_attempt is None:
            raise ValueError("failure.last_attempt is required")
        return cls(
            instance_id=data["instance_id"],
            reason=data["reason"],
            attempt_count=int(data["attempt_count"]),
            last_attempt=last_attempt,
        )


MAX_INSTANCES_PER_BATCH = 1000
"""The largest page of instances one job handles at a time."""


@dataclass
class ExportJobConfiguration:
    """A job's validated configuration, as the entity stores it and the orchestration receives it."""

    mode: ExportMode
    filter: ExportFilter
    destination: ExportDestination
    format: ExportFormat = field(default_factory=ExportFormat)
    max_instances_per_batch: int = 100
    max_parallel_exports: int = 32

    def __post_init__(self) -> None:
        if not 1 <= self.max_instances_per_batch <= MAX_INSTANCES_PER_BATCH:
            raise ValueError(
                f"max_instances_per_batch must be in [1, {MAX_INSTANCES_PER_BATCH}]; got {self.max_instances_per_batch}"
            )
        if self.max_parallel_exports <= 0:
            raise ValueError("max_parallel_exports must be positive")
        self._check_window()
        if self.filter.runtime_status is not None:
            others = [s for s in self.filter.runtime_status if s not in _TERMINAL_RUNTIME_STATUSES]
            if others:
                names = ", ".join(sorted(s.name for s in others))
                allowed = "{COMPLETED, FAILED, TERMINATED}"
                raise ValueError(f"runtime_status may only contain terminal statuses ({allowed}); got {names}")

    def _check_window(self) -> None:
        window_end = self.filter.completed_time_to
        if self.mode is ExportMode.BATCH and window_end is None:
            raise ValueError("completed_time_to is required for batch mode exports")
        if self.mode is ExportMode.CONTINUOUS and window_end is not None:
            raise ValueError(
                "completed_time_to is not allowed for continuous mode exports; the tail has no upper bound"
            )
        if window_end is not None and window_end <= self.filter.completed_time_from:
            raise ValueError("completed_time_to must be strictly greater than completed_time_from")

    def to_dict(self) -> dict[str, Any]:
        """This job configuration as the plain dict the job entity stores: its mode, filter, destination, format and
        batch settings.
        """
        return {
            "mode": self.mode.value,
            "filter": self.filter.to_dict(),
            "destination": self.destination.to_dict(),
            "format": self.format.to_dict(),
            "max_instances_per_batch": self.max_instances_per_batch,
            "max_parallel_exports": self.max_parallel_exports,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportJobConfiguration:
        """Reads what :meth:`to_dict` wrote.

        Args:
            data: The stored dict.

        Raises:
            KeyError: A required key is missing.
            ValueError: A value is malformed.
        """
        # Only a missing format takes the default: an empty one is an error, not a silent default.
        format_data = data.get("format")
        if format_data is None:
            format_data = {"kind": ExportFormatKind.JSONL_GZIP.value}
        return cls(
            mode=ExportMode(data["mode"]),
            filter=ExportFilter.from_dict(data["filter"]),
            destination=ExportDestination.from_dict(data["destination"]),
            format=ExportFormat.from_dict(format_data),
            max_instances_per_batch=int(data.get("max_instances_per_batch", 100)),
            max_parallel_exports=int(data.get("max_parallel_exports", 32)),
        )


@dataclass
class ExportJobQuery:
    """Filters for listing jobs: statuses, a last-modified window, and the page size of the entity query."""

    status: list[ExportJobStatus] | None = None
    last_modified_from: datetime | None = None
    last_modified_to: datetime | None = None
    page_size: int | None = None


@dataclass
class ExportJobCreationOptions:
    """What a caller asks for when creating a job (the job ID is passed to ``create_job`` separately)."""

    mode: ExportMode
    completed_time_from: datetime
    destination: ExportDestination
    completed_time_to: datetime | None = None
    runtime_status: list[OrchestrationStatus] | None = None
    format: ExportFormat = field(default_factory=ExportFormat)
    max_instances_per_batch: int = 100
    max_parallel_exports: int = 32

    def to_configuration(self) -> ExportJobConfiguration:
        """The validated configuration; raises ``ValueError`` naming the offending field."""
        return ExportJobConfiguration(
            mode=self.mode,
            filter=ExportFilter(
                completed_time_from=self.completed_time_from,
                completed_time_to=self.completed_time_to,
                runtime_status=self.runtime_status,
            ),
            destination=self.destination,
            format=self.format,
            max_instances_per_batch=self.max_instances_per_batch,
            max_parallel_exports=self.max_parallel_exports,
        )


STATE_SCHEMA_VERSION = "1.0"
"""The version written with every persisted job state; reading refuses any other."""


@dataclass
class ExportJobState:
    """The export-job entity's state, and the only code that reads or writes its stored form."""

    status: ExportJobStatus
    config: ExportJobConfiguration
    created_at: datetime
    last_modified_at: datetime
    orchestrator_instance_id: str | None = None
    checkpoint: ExportCheckpoint = field(default_factory=ExportCheckpoint)
    last_checkpoint_time: datetime | None = None
    last_error: str | None = None
    scanned_instances: int = 0
    exported_instances: int = 0
    failed_instances: int = 0
    failures: list[ExportFailure] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """This job state as the plain dict the job entity stores: the whole persisted state, with its schema version.
        """
        return {
            "schema_version": STATE_SCHEMA_VERSION,
            "status": self.status.value,
            "config": self.config.to_dict(),
            "checkpoint": self.checkpoint.to_dict(),
            "created_at": dt_to_iso(self.created_at),
            "last_modified_at": dt_to_iso(self.last_modified_at),
            "last_checkpoint_time": dt_to_iso(self.last_checkpoint_time),
            "last_error": self.last_error,
            "scanned_instances": self.scanned_instances,
            "exported_instances": self.exported_instances,
            "failed_instances": self.failed_instances,
            "orchestrator_instance_id": self.orchestrator_instance_id,
            "failures": [f.to_dict() for f in self.failures],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportJobState:
        """Reads what :meth:`to_dict` wrote.

        Args:
            data: The stored dict.

        Raises:
            KeyError: A required key is missing.
            ValueError: A value is malformed or the state's schema version is not this release's.
        """
        version = data.get("schema_version", STATE_SCHEMA_VERSION)
        if version != STATE_SCHEMA_VERSION:
            raise ValueError(
                f"Unsupported export job state schema_version={version!r}; expected {STATE_SCHEMA_VERSION!r}"
            )
        config_data = data.get("config")
        if not config_data:
            raise ValueError("persisted state is missing 'config'")
        created_at = dt_from_iso(data.get("created_at"))
        last_modified_at = dt_from_iso(data.get("last_modified_at"))
        if created_at is None or last_modified_at is None:
            raise ValueError("persisted state must include 'created_at' and 'last_modified_at'")
        checkpoint_data = data.get("checkpoint")
        return cls(
            status=ExportJobStatus(data["status"]),
            config=ExportJobConfiguration.from_dict(config_data),
            created_at=created_at,
            last_modified_at=last_modified_at,
            orchestrator_instance_id=data.get("orchestrator_instance_id"),
            checkpoint=ExportCheckpoint() if checkpoint_data is None else ExportCheckpoint.from_dict(checkpoint_data),
            last_checkpoint_time=dt_from_iso(data.get("last_checkpoint_time")),
            last_error=data.get("last_error"),
            scanned_instances=int(data.get("scanned_instances", 0)),
            exported_instances=int(data.get("exported_instances", 0)),
            failed_instances=int(data.get("failed_instances", 0)),
            failures=[ExportFailure.from_dict(f) for f in data.get("failures") or []],
        )

    @classmethod
    def new(
        cls, config: ExportJobConfiguration, *, created_at: datetime, orchestrator_instance_id: str | None = None
    ) -> ExportJobState:
        """The state of a job just created: ACTIVE, no progress.

        Args:
            config: The job's configuration.
            created_at: The creation time (also its last modification time).
            orchestrator_instance_id: The instance of the orchestration driving it, once known.
        """
        return cls(
            status=ExportJobStatus.ACTIVE,
            config=config,
            created_at=created_at,
            last_modified_at=created_at,
            orchestrator_instance_id=orchestrator_instance_id,
        )


@dataclass
class ExportJobDescription:
    """What a client sees of a job: its status, configuration, progress counters and failures."""

    job_id: str
    status: ExportJobStatus
    created_at: datetime | None
    last_modified_at: datetime | None
    config: ExportJobConfiguration | None
    orchestrator_instance_id: str | None
    scanned_instances: int
    exported_instances: int
    failed_instances: int
    last_error: str | None
    checkpoint: ExportCheckpoint | None
    last_checkpoint_time: datetime | None
    failures: list[ExportFailure] = field(default_factory=list)

    @classmethod
    def from_state(cls, job_id: str, state: ExportJobState) -> ExportJobDescription:
        """What a client sees of the stored ``state`` of job ``job_id``.

        Args:
            job_id: The job's ID.
            state: The job entity's state.
        """
        return cls(
            job_id=job_id,
            status=state.status,
            created_at=state.created_at,
            last_modified_at=state.last_modified_at,
            config=state.config,
            orchestrator_instance_id=state.orchestrator_instance_id,
            scanned_instances=state.scanned_instances,
            exported_instances=state.exported_instances,
            failed_instances=state.failed_instances,
            last_error=state.last_error,
            checkpoint=state.checkpoint,
            last_checkpoint_time=state.last_checkpoint_time,
            failures=list(state.failures),
        )

    @classmethod
    def from_state_dict(cls, job_id: str, state: Mapping[str, Any]) -> ExportJobDescription:
        """The description of a job from its stored entity state.

        Args:
            job_id: The job's ID.
            state: The entity's state, as :meth:`ExportJobState.to_dict` wrote it.
        """
        return cls.from_state(job_id, ExportJobState.from_dict(state))


__all__ = [
    "MAX_INSTANCES_PER_BATCH",
    "STATE_SCHEMA_VERSION",
    "ExportCheckpoint",
    "ExportDestination",
    "ExportFailure",
    "ExportFilter",
    "ExportFormat",
    "ExportFormatKind",
    "ExportJobConfiguration",
    "ExportJobCreationOptions",
    "ExportJobDescription",
    "ExportJobQuery",
    "ExportJobState",
    "ExportJobStatus",
    "ExportMode",
]
