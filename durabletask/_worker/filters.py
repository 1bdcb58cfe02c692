"""Work item filters: what a worker asks the backend to send it, generated or user-supplied."""

from __future__ import annotations

from dataclasses import dataclass, field

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.activity_control import CONTROL_ENTITY
from durabletask._worker.options import VersioningOptions, VersionMatchStrategy
from durabletask._worker.registry import WorkerRegistry


@dataclass(frozen=True)
class OrchestrationWorkItemFilter:
    """Receive work for the orchestration ``name`` (only ``versions``, when given)."""

    name: str
    versions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ActivityWorkItemFilter:
    """Receive work for the activity ``name`` (only ``versions``, when given)."""

    name: str
    versions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EntityWorkItemFilter:
    """Receive work for the entity ``name`` (entity names are case-insensitive; stored lower-case)."""

    name: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("an entity name cannot be empty")
        if "@" in self.name:
            raise ValueError(f"an entity name cannot contain '@': {self.name!r}")
        object.__setattr__(self, "name", self.name.lower())


@dataclass(frozen=True)
class WorkItemFilters:
    """The orchestrations, activities and entities a worker asks the backend to send it.

    Only matching work items are delivered to a worker that sends filters; a worker that sends
    none receives everything. Enable with :meth:`TaskHubGrpcWorker.use_work_item_filters`.
    """

    orchestrations: list[OrchestrationWorkItemFilter] = field(default_factory=list)
    activities: list[ActivityWorkItemFilter] = field(default_factory=list)
    entities: list[EntityWorkItemFilter] = field(default_factory=list)

    @classmethod
    def _from_registry(cls, registry: WorkerRegistry, versioning: VersioningOptions | None = None) -> WorkItemFilters:
        return filters_from_registry(registry, versioning)

    def _to_grpc(self) -> pb.WorkItemFilters:
        return filters_to_proto(self)


def filters_from_registry(registry: WorkerRegistry, versioning: VersioningOptions | None = None) -> WorkItemFilters:
    """Filters naming everything registered; under strict versioning, only the worker's version."""
    if versioning is None:
        versioning = registry.versioning
    versions: list[str] = []
    if versioning is not None and versioning.match_strategy is VersionMatchStrategy.STRICT and versioning.version:
        versions = [versioning.version]
    return WorkItemFilters(
        orchestrations=[OrchestrationWorkItemFilter(name, list(versions)) for name in registry.orchestrators],
        activities=[ActivityWorkItemFilter(name, list(versions)) for name in registry.activities],
        entities=[EntityWorkItemFilter(name) for name in registry.entities] + _control_entity(registry),
    )


def _control_entity(registry: WorkerRegistry) -> list[EntityWorkItemFilter]:
    # A worker that runs orchestrations may cancel bounded activities through the built-in control entity,
    # which it serves (see heartbeats.py); a filter naming everything else would leave its signals queued.
    if registry.orchestrators and CONTROL_ENTITY not in registry.entities:
        return [EntityWorkItemFilter(CONTROL_ENTITY)]
    return []


def filters_to_proto(filters: WorkItemFilters) -> pb.WorkItemFilters:
    """The wire form of ``filters``."""
    return pb.WorkItemFilters(
        orchestrations=[pb.OrchestrationFilter(name=f.name, versions=f.versions) for f in filters.orchestrations],
        activities=[pb.ActivityFilter(name=f.name, versions=f.versions) for f in filters.activities],
        entities=[pb.EntityFilter(name=f.name) for f in filters.entities],
    )
