"""``durabletask.scheduled`` offers every name and parameter Microsoft's 1.12 does (extra ones are optional)."""

from __future__ import annotations

import inspect
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.unit.replay.test_api_parity import _DESCRIBE, _compatible, _params_of, _resolve

pytestmark = pytest.mark.interop

MODULES = {
    "durabletask.scheduled": [
        "ScheduledTaskClient",
        "AsyncScheduledTaskClient",
        "ScheduleClient",
        "AsyncScheduleClient",
        "ScheduleCreationOptions",
        "ScheduleUpdateOptions",
        "ScheduleDescription",
        "ScheduleQuery",
        "ScheduleStatus",
        "ScheduleError",
        "ScheduleNotFoundError",
        "ScheduleClientValidationError",
        "ScheduleInvalidTransitionError",
    ],
    "durabletask.scheduled.client": [
        "ScheduledTaskClient",
        "AsyncScheduledTaskClient",
        "ScheduleClient",
        "AsyncScheduleClient",
    ],
    "durabletask.scheduled.models": ["ScheduleConfiguration", "ScheduleState", "ScheduleQuery"],
    "durabletask.scheduled.schedule_status": ["ScheduleStatus"],
    "durabletask.scheduled.transitions": ["is_valid_transition"],
    "durabletask.scheduled.exceptions": [
        "ScheduleError",
        "ScheduleNotFoundError",
        "ScheduleClientValidationError",
        "ScheduleInvalidTransitionError",
    ],
    "durabletask.scheduled.schedule_entity": ["Schedule"],
    "durabletask.scheduled.orchestrator": ["ScheduleOperationRequest", "execute_schedule_operation_orchestrator"],
}
# Microsoft's converter passes itself to a from_json hook that asks for it; ours never calls the hook.
INTERNAL = {"durabletask.scheduled.models.ScheduleState.from_json"}


def describe(python: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, "-c", _DESCRIBE, json.dumps(MODULES)],
        capture_output=True,
        check=False,
        cwd=tempfile.gettempdir(),
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    described: dict[str, Any] = json.loads(done.stdout)
    return described


def describe_ours() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(_DESCRIBE.replace("print(json.dumps(describe(json.loads(sys.argv[1]))))", ""), namespace)
    result: dict[str, Any] = namespace["describe"](MODULES)
    return result


def test_scheduled_names_and_parameters_match_the_compatible_api(peer_py: Path) -> None:
    theirs, ours = describe(str(peer_py)), describe_ours()
    problems = []
    for key, reference in theirs.items():
        mine = ours.get(key)
        if mine is None:
            problems.append(f"{key}: missing")
            continue
        for member, ref_params in reference["members"].items():
            qualified = f"{key}.{member}" if member else key
            if not hasattr(_resolve(key), member or "__call__"):
                problems.append(f"{qualified}: missing")
                continue
            if not isinstance(ref_params, list) or qualified in INTERNAL:
                continue
            my_params = mine["members"].get(member) or _params_of(_resolve(key), member)
            problem = _compatible(my_params, ref_params) if my_params is not None else "not inspectable"
            if problem:
                problems.append(f"{qualified}: {problem}")
    assert not problems, "\n".join(problems)


def test_both_workers_offer_configure_scheduled_tasks() -> None:
    from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker
    from durabletask.worker import TaskHubGrpcWorker

    for cls in (TaskHubGrpcWorker, DurableTaskSchedulerWorker):
        parameters = inspect.signature(cls.configure_scheduled_tasks).parameters
        assert list(parameters) == ["self", "clock"] and parameters["clock"].kind == inspect.Parameter.KEYWORD_ONLY


def test_configure_scheduled_tasks_registers_the_entity_the_orchestrator_and_the_capability() -> None:
    from durabletask._proto import orchestrator_service_pb2 as pb
    from durabletask.worker import TaskHubGrpcWorker

    w = TaskHubGrpcWorker(host_address="localhost:1")
    w.configure_scheduled_tasks()
    request = w._work_items_request()
    assert pb.WORKER_CAPABILITY_SCHEDULED_TASKS in request.capabilities
    assert w._registry.get_entity("schedule") is not None
    assert w._registry.get_orchestrator("execute_schedule_operation_orchestrator") is not None
