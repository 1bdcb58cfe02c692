"""Re-records the golden histories in this folder (run from the repository root).

    python -m tests.unit.replay.golden.record

Each file holds the history as an ``OrchestratorRequest`` in protobuf JSON and the actions the executor
produced when it was recorded. Only re-record on purpose: the files pin replay behaviour.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from tests.unit.replay.golden.orchestrators import CODE
from tests.unit.replay.history import T0, History, failure, registry

HERE = Path(__file__).resolve().parent


def histories() -> dict[str, History]:
    order = {"sku": "A-1", "amount": 12.5}
    pipeline = (History("order-42").started("order_pipeline", order)
                .task_scheduled(1, "reserve_stock").orchestrator_completed()
                .orchestrator_started().task_completed(1, "res-9").task_scheduled(2, "charge_card")
                .orchestrator_completed()
                .orchestrator_started().task_completed(2, {"receipt": "r-1"}).task_scheduled(3, "ship")
                .orchestrator_completed()
                .new().orchestrator_started().task_completed(3, "TRACK-7"))

    deadline = T0 + timedelta(hours=1, seconds=1)
    approval = (History("approval-1").started("approval_with_deadline", "req-1")
                .task_scheduled(1, "notify").task_scheduled(2, "notify").orchestrator_completed()
                .orchestrator_started().task_completed(2).task_completed(1)
                .timer_created(3, deadline).orchestrator_completed()
                .new().orchestrator_started().event_raised("approved", "carol"))

    # Every attempt is scheduled under the first attempt's ID (1); the retry timers take 2 and 3.
    retries = History("flaky-1").started("flaky_with_retries").task_scheduled(1, "flaky")
    for attempt in range(2):
        retries.orchestrator_started().task_failed(1, failure(f"attempt {attempt + 1} failed"))
        fire = retries.now + timedelta(seconds=5 * 2 ** attempt)
        timer_id = attempt + 2
        retries.timer_created(timer_id, fire).orchestrator_started(fire).timer_fired(timer_id, fire)
        retries.task_scheduled(1, "flaky")
    retries.new().orchestrator_started().task_completed(1, "third time lucky")

    return {
        "order_pipeline_completed.json": pipeline,
        "approval_with_deadline.json": approval,
        "flaky_with_retries.json": retries,
        # Recorded by order_pipeline; replayed by the renamed version it must reject.
        "order_pipeline_renamed_activity.json": pipeline,
    }


def comparable(action: pb.OrchestratorAction) -> dict[str, Any]:
    """An action as JSON, without stack traces (they depend on file paths and line numbers)."""
    data = json_format.MessageToDict(action)
    details = data.get("completeOrchestration", {}).get("failureDetails")
    while details is not None:
        details.pop("stackTrace", None)
        details = details.get("innerFailure")
    return data


def replay(document: dict[str, Any], fn: Any) -> list[dict[str, Any]]:
    request = json_format.ParseDict(document["request"], pb.OrchestratorRequest())
    executor = OrchestrationExecutor(registry(fn))
    result = executor.execute(request.instanceId, request.pastEvents, request.newEvents)
    return [comparable(action) for action in result.actions]


def main() -> None:
    for filename, history in histories().items():
        request = pb.OrchestratorRequest(instanceId=history.instance_id, pastEvents=history.old,
                                         newEvents=history.new_events)
        document: dict[str, Any] = {"request": json_format.MessageToDict(request)}
        document["expectedActions"] = replay(document, CODE[filename])
        (HERE / filename).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {filename}")


if __name__ == "__main__":
    main()
