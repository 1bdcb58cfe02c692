"""Work item filter generation and the versioning decisions (pure functions, no gRPC)."""

from __future__ import annotations

import logging

import pytest
from google.protobuf import wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._worker.filters import filters_from_registry, filters_to_proto
from durabletask._worker.registry import WorkerRegistry
from durabletask._worker.versioning import (
    check_orchestration_version,
    compare_versions,
    orchestration_version,
    rejects,
)
from durabletask.worker import (
    ActivityWorkItemFilter,
    EntityWorkItemFilter,
    OrchestrationWorkItemFilter,
    TaskHubGrpcWorker,
    VersionFailureStrategy,
    VersioningOptions,
    VersionMatchStrategy,
    WorkItemFilters,
)


def orch(ctx: object, value: object) -> None: ...


def act(ctx: object, value: object) -> None: ...


class Counter: ...


def registry(versioning: VersioningOptions | None = None) -> WorkerRegistry:
    reg = WorkerRegistry()
    reg.add_orchestrator(orch)
    reg.add_activity(act)
    reg.add_entity(Counter)
    reg.versioning = versioning
    return reg


# --- filters ----------------------------------------------------------------------------------
def test_filters_name_everything_registered() -> None:
    filters = filters_from_registry(registry())
    assert filters == WorkItemFilters(
        orchestrations=[OrchestrationWorkItemFilter("orch")],
        activities=[ActivityWorkItemFilter("act")],
        entities=[EntityWorkItemFilter("counter"), EntityWorkItemFilter("dtscale.activities")],
    )


def test_strict_versioning_puts_the_worker_version_on_orchestrations_and_activities() -> None:
    filters = filters_from_registry(
        registry(VersioningOptions(version="2.1", match_strategy=VersionMatchStrategy.STRICT))
    )
    assert filters.orchestrations[0].versions == ["2.1"]
    assert filters.activities[0].versions == ["2.1"]


@pytest.mark.parametrize("strategy", [None, VersionMatchStrategy.NONE, VersionMatchStrategy.CURRENT_OR_OLDER])
def test_other_strategies_do_not_restrict_versions(strategy: VersionMatchStrategy | None) -> None:
    filters = filters_from_registry(registry(VersioningOptions(version="2.1", match_strategy=strategy)))
    assert filters.orchestrations[0].versions == []
    assert filters.activities[0].versions == []


def test_filters_to_proto() -> None:
    proto = filters_to_proto(
        WorkItemFilters(
            orchestrations=[OrchestrationWorkItemFilter("o", ["1", "2"])],
            activities=[ActivityWorkItemFilter("a")],
            entities=[EntityWorkItemFilter("MyEntity")],
        )
    )
    assert proto == pb.WorkItemFilters(
        orchestrations=[pb.OrchestrationFilter(name="o", versions=["1", "2"])],
        activities=[pb.ActivityFilter(name="a")],
        entities=[pb.EntityFilter(name="myentity")],
    )


@pytest.mark.parametrize("name", ["", "bad@name"])
def test_entity_filter_rejects_invalid_names(name: str) -> None:
    with pytest.raises(ValueError):
        EntityWorkItemFilter(name)


def test_use_work_item_filters_modes() -> None:
    worker = TaskHubGrpcWorker(logger=logging.getLogger("durabletask-worker-tests"))
    assert not worker._work_items_request().HasField("workItemFilters")  # off by default

    custom = WorkItemFilters(activities=[ActivityWorkItemFilter("other")])
    worker.use_work_item_filters(custom)
    assert [f.name for f in worker._work_items_request().workItemFilters.activities] == ["other"]

    worker.use_work_item_filters(None)
    assert not worker._work_items_request().HasField("workItemFilters")

    with pytest.raises(TypeError):
        worker.use_work_item_filters(["act"])  # type: ignore[call-overload]


# --- versions ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("1.0", "1.0", 0),
        ("1.0", "1.0.0", 0),
        ("1.10", "1.9", 1),
        ("1.9", "1.10", -1),
        ("2", "10", -1),
        ("1.0.0-beta", "1.0.0", -1),
        ("1.0.0", "1.0.0rc1", 1),
        ("1.0.0-alpha", "1.0.0-beta", -1),
        (None, "1.0", -1),
        ("1.0", None, 1),
        (None, None, 0),
        ("", None, 0),
        ("blue", "green", -1),
    ],
)
def test_compare_versions(left: str | None, right: str | None, expected: int) -> None:
    assert compare_versions(left, right) == expected
    assert compare_versions(right, left) == -expected


def _options(strategy: VersionMatchStrategy | None, version: str = "2.0") -> VersioningOptions:
    return VersioningOptions(version=version, match_strategy=strategy)


@pytest.mark.parametrize(
    ("strategy", "orchestration", "accepted"),
    [
        (VersionMatchStrategy.NONE, "9.0", True),
        (None, "9.0", True),
        (VersionMatchStrategy.STRICT, "2.0", True),
        (VersionMatchStrategy.STRICT, "2.0.0", True),
        (VersionMatchStrategy.STRICT, "1.0", False),
        (VersionMatchStrategy.STRICT, None, False),
        (VersionMatchStrategy.CURRENT_OR_OLDER, "1.5", True),
        (VersionMatchStrategy.CURRENT_OR_OLDER, "2.0", True),
        (VersionMatchStrategy.CURRENT_OR_OLDER, None, True),
        (VersionMatchStrategy.CURRENT_OR_OLDER, "2.1", False),
    ],
)
def test_match_strategies(strategy: VersionMatchStrategy | None, orchestration: str | None, accepted: bool) -> None:
    mismatch = check_orchestration_version(_options(strategy), orchestration)
    assert (mismatch is None) == accepted
    if mismatch is not None:
        details = mismatch.failure_details()
        assert details.errorType == "VersionMismatch"
        assert details.isNonRetriable
        assert "2.0" in details.errorMessage


def test_no_versioning_accepts_everything() -> None:
    assert check_orchestration_version(None, "anything") is None


def test_failure_strategy_defaults_to_reject() -> None:
    assert rejects(VersioningOptions())
    assert rejects(VersioningOptions(failure_strategy=VersionFailureStrategy.REJECT))
    assert not rejects(VersioningOptions(failure_strategy=VersionFailureStrategy.FAIL))


def test_orchestration_version_comes_from_execution_started() -> None:
    started = pb.ExecutionStartedEvent(name="o", version=wrappers_pb2.StringValue(value="3.2"))
    request = pb.OrchestratorRequest(
        instanceId="i",
        pastEvents=[pb.HistoryEvent(orchestratorStarted=pb.OrchestratorStartedEvent())],
        newEvents=[pb.HistoryEvent(executionStarted=started)],
    )
    assert orchestration_version(request) == "3.2"
    assert orchestration_version(pb.OrchestratorRequest(instanceId="i")) is None
