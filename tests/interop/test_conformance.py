"""Each scenario, run in four cells (which SDK x which backend), gives the expected result or a documented one.

Direction A: Microsoft's SDK (its DurableTaskScheduler client and worker, in a subprocess) against our emulator.
Direction B: our client and worker, in this process, against Microsoft's in-memory test backend.
Reference: Microsoft's SDK against Microsoft's backend, which shows that the expected results are theirs.
Ours: our SDK against our emulator, which completes the matrix (both run as background batches).
docs/conformance.md records the outcome of every cell and each known difference.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, Batch, background_batch, official_backend, our_env, peer_env, run_here, run_in_peer

pytestmark = [
    pytest.mark.interop,
    pytest.mark.local_only("compares our emulator with Microsoft's in-memory backend (see test_external.py)"),
]

SPECIALISTS = [f"{kind}{i}@specialist-{kind}" for i in range(3) for kind in ("a", "b")]

# What the scenario's ExceptionPropertiesProvider records for a CodedError (numbers come back as floats).
CODED = {"tags": ["coded", None, True], "nested": {"depth": 2.0}}

EXPECTED: dict[str, Any] = {
    "chaining": {"status": "COMPLETED", "output": ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]},
    "fan_out_fan_in": {"status": "COMPLETED", "output": 90},
    "timers": {
        "status": "COMPLETED",
        "output": {"fired": True, "waited_long_enough": True},
        "elapsed_at_least_delay": True,
    },
    "external_event": {
        "plain": {"status": "COMPLETED", "output": "approved:yes"},
        "with_timeout": {"status": "COMPLETED", "output": "approved:in time"},
    },
    "external_event_timeout": {"status": "COMPLETED", "output": "timed out"},
    "sub_orchestrations": {"status": "COMPLETED", "output": [1, 3, 5], "children": ["COMPLETED"] * 3},
    "retries": {
        "enough": {"status": "COMPLETED", "output": "ok after 3", "executions": 3},
        "too_few": {"status": "FAILED", "error": "<id>: Activity task #1 failed: attempt 2 failed", "executions": 2},
    },
    "retry_timeout": {"status": "FAILED", "error": "<id>: Activity task #1 failed: attempt 1 failed", "executions": 4},
    "exception_properties": {
        "orchestrator": [["CodedError", CODED | {"code": 7.0}]],
        "activity": [
            ["TaskFailedError", None],
            ["CodedError", CODED | {"code": 42.0}],
            ["KeyError", {"missing": "'inner'"}],
        ],
        "entity": [
            ["TaskFailedError", None],
            ["EntityOperationFailedException", CODED | {"code": 5.0}],
            ["CodedError", CODED | {"code": 5.0}],
        ],
    },
    "continue_as_new": {"status": "COMPLETED", "output": 3},
    "suspend_resume": {
        "suspended": "SUSPENDED",
        "after_event": "SUSPENDED",
        "status": "COMPLETED",
        "output": "approved:later",
    },
    "terminate": {"status": "TERMINATED", "output": "stopped"},
    "purge": {"single": 1, "again": 0, "by_filter": 2, "remaining": [False, False, False]},
    "query": {
        "completed": [f"-done-{i}" for i in range(5)],
        "running": ["-run-0", "-run-1"],
        "paged": [f"-done-{i}" for i in range(5)] + ["-run-0", "-run-1"],
        "with_payloads": [0, 1, 2, 3, 4],
        "id_pages": {"ids": [f"-done-{i}" for i in range(5)], "several_pages": True, "largest_page": 2},
    },
    "work_item_filters": {"status": "COMPLETED", "output": SPECIALISTS},
    "versioning": {
        "while_only_v1": "PENDING",
        "v2": {"status": "COMPLETED", "output": {"version": "2.0", "ran_on": "version-2"}},
        "v1": {"status": "COMPLETED", "output": {"version": "1.0", "ran_on": "version-1"}},
    },
    "edge_cases": {
        "failure_type": "durabletask.task.TaskFailedError",
        "get_missing": True,
        "raise_event_missing": "NOT_FOUND",
        "suspend_missing": "NOT_FOUND",
        "resume_missing": "NOT_FOUND",
        "terminate_missing": "ok",
        "purge_missing": 0,
        "rewind_missing": "NOT_FOUND",
        "rewind_completed": "FAILED_PRECONDITION",
        "start_existing_running": "ALREADY_EXISTS",
        "start_existing_completed": "ALREADY_EXISTS",
        "purge_running": 0,
        "terminate_completed": "ok",
        "raise_event_completed": "ok",
        "oversized_input": True,
        "unknown_activity": ["FAILED", "durabletask.task.TaskFailedError"],
        "unknown_orchestrator": ["FAILED", "durabletask.worker.OrchestratorNotRegisteredError"],
        "restart_same_id": True,
        "restart_new_id": True,
    },
    "history_and_state": {
        "status": "COMPLETED",
        "output": {"greeting": "Hello Ada!", "answer": "yes", "child": 5},
        "stage": {"stage": "waiting"},
        "name": "eventful",
        "input": '"Ada"',
        "custom_status": {"stage": "waiting"},
        "times_ordered": True,
        "history": [
            *("OrchestratorStartedEvent", "ExecutionStartedEvent", "TaskScheduledEvent", "OrchestratorCompletedEvent"),
            *("OrchestratorStartedEvent", "TaskCompletedEvent", "TimerCreatedEvent", "OrchestratorCompletedEvent"),
            *("OrchestratorStartedEvent", "TimerFiredEvent", "OrchestratorCompletedEvent"),
            *("OrchestratorStartedEvent", "EventRaisedEvent", "SubOrchestrationInstanceCreatedEvent"),
            "OrchestratorCompletedEvent",
            *("OrchestratorStartedEvent", "SubOrchestrationInstanceCompletedEvent", "OrchestratorCompletedEvent"),
            "ExecutionCompletedEvent",
        ],
    },
    "rewind": {
        "status": "COMPLETED",
        "output": ["steady:1", "fragile:2"],
        "first_run": "FAILED",
        "steady_runs": 1,
        "fragile_runs": 2,
    },
    "entity_admin": {
        "states": [1, 2, 3],
        "found": [["-0", 1], ["-1", 2], ["-2", 3]],
        "failure": {
            "status": "COMPLETED",
            "output": {
                "caught": "TaskFailedError",
                "message": "Operation 'explode' on entity '@tally@<prefix>-0' failed with error: exploded at 1",
            },
        },
        "state_after_failure": 1,
        "state_after_delete": None,
        "exists_after_delete": True,
        "cleaned": [True, 0],
        "exists_after_clean": False,
    },
    "entities": {
        "status": "COMPLETED",
        "output": [8, 9, 1],
        "after_signal": 5,
        "second_after_signal": 11,
        "first_final": 9,
    },
}

OURS_ON_OFFICIAL = "our_sdk_on_official_backend"
OFFICIAL_ON_OURS = "official_sdk_on_our_emulator"
REFERENCE = "official_sdk_on_official_backend"
OURS = "our_sdk_on_our_emulator"
OUR_SDK = {OURS_ON_OFFICIAL, OURS}
OUR_EMULATOR = {OFFICIAL_ON_OURS, OURS}

# (cell, scenario) -> why the pair is expected to fail until the cause is fixed, as a strict xfail so that the
# fix is noticed. Empty while every cell passes; the cross-SDK handoff failures live in test_handoff.py.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}

# scenario -> the parts of the result that differ on purpose wherever our emulator is the backend;
# docs/conformance.md gives the reasons.
EMULATOR_DIFFERENCES: dict[str, dict[str, Any]] = {
    # Without a reuse policy our emulator lets a new start replace a finished instance, it reports a terminate
    # of an unknown instance as NOT_FOUND, and it refuses payloads over 1 MiB; Microsoft's in-memory backend
    # rejects the first, ignores the second and accepts the third.
    "edge_cases": {
        "start_existing_completed": True,
        "terminate_missing": "NOT_FOUND",
        "oversized_input": "INVALID_ARGUMENT",
    },
    # An entity whose state was removed no longer exists on our emulator (as in DTS), so clean_entity_storage finds
    # nothing to remove; Microsoft's backend still reports it (without state) until clean_entity_storage removes it.
    "entity_admin": {"exists_after_delete": False, "cleaned": [False, 0]},
    # DTS stores no OrchestratorCompletedEvent (durabletask-js's e2e suite against DTS counts exactly 12 events for
    # an activity, a timer and a sub-orchestration), and neither does our emulator; Microsoft's backend closes every
    # turn with one.
    "history_and_state": {
        "history": [
            *("OrchestratorStartedEvent", "ExecutionStartedEvent", "TaskScheduledEvent"),
            *("OrchestratorStartedEvent", "TaskCompletedEvent", "TimerCreatedEvent"),
            *("OrchestratorStartedEvent", "TimerFiredEvent"),
            *("OrchestratorStartedEvent", "EventRaisedEvent", "SubOrchestrationInstanceCreatedEvent"),
            *("OrchestratorStartedEvent", "SubOrchestrationInstanceCompletedEvent", "ExecutionCompletedEvent"),
        ],
    },
}

# scenario -> the parts of the result that differ on purpose wherever our SDK is the client and worker.
SDK_DIFFERENCES: dict[str, dict[str, Any]] = {
    # Our client refuses a payload over 1 MiB before sending it; Microsoft's client has no limit.
    "edge_cases": {"oversized_input": "PayloadTooLargeError"},
}


def expected(cell: str, scenario: str) -> Any:
    result = dict(EXPECTED[scenario])
    if cell in OUR_EMULATOR:
        result.update(EMULATOR_DIFFERENCES.get(scenario, {}))
    if cell in OUR_SDK:  # after the emulator's: our client's own checks act before the backend sees the call
        result.update(SDK_DIFFERENCES.get(scenario, {}))
    return result


def _params(direction: str) -> list[Any]:
    params = []
    for name in EXPECTED:
        reason = KNOWN_FAILURES.get((direction, name))
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)] if reason else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("scenario", _params(OFFICIAL_ON_OURS))
def test_official_sdk_on_our_emulator(scenario: str, peer_py: Path, emulator_port: int) -> None:
    result = run_in_peer(peer_py, "dts", f"http://localhost:{emulator_port}", scenario)
    assert result == expected(OFFICIAL_ON_OURS, scenario)


@pytest.mark.parametrize("scenario", _params(OURS_ON_OFFICIAL))
def test_our_sdk_on_official_backend(scenario: str, official_backend_port: int) -> None:
    assert run_here(official_backend_port, scenario) == expected(OURS_ON_OFFICIAL, scenario)


@pytest.fixture(scope="module", autouse=True)
def reference(peer_py: Path) -> Iterator[Batch]:
    """The reference cell runs in the background, on a backend of its own, while the other cells run."""
    with (
        official_backend(peer_py) as port,
        background_batch(peer_py, peer_env(), "/", "grpc", f"localhost:{port}", list(EXPECTED)) as batch,
    ):
        yield batch


@pytest.fixture(scope="module", autouse=True)
def ours(emulator_port: int) -> Iterator[Batch]:
    """Our SDK (its DurableTaskScheduler classes) on our emulator, in the background as well."""
    address = f"http://localhost:{emulator_port}"
    with background_batch(sys.executable, our_env(), str(ROOT), "dts", address, list(EXPECTED)) as batch:
        yield batch


@pytest.mark.parametrize("scenario", _params(REFERENCE))
def test_official_sdk_on_official_backend(scenario: str, reference: Batch) -> None:
    assert reference.result(scenario) == expected(REFERENCE, scenario)


@pytest.mark.parametrize("scenario", _params(OURS))
def test_our_sdk_on_our_emulator(scenario: str, ours: Batch) -> None:
    assert ours.result(scenario) == expected(OURS, scenario)
