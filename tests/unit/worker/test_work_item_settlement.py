"""Every work item ends with a completion or an abandonment, even when its runner itself raises."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from worker_fakes import WAIT

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._worker.completions import CompletionSender
from durabletask._worker.dispatch import WorkItemPools, WorkKind
from durabletask._worker.work_items import WorkItemHandler

pytestmark = pytest.mark.adversarial

LOG = logging.getLogger("durabletask-settlement-tests")


class _Raising:
    """Stands in for any runner: every call raises what it was given (as a bug in a runner would)."""

    def __init__(self, error: type[BaseException]) -> None:
        self._error = error

    def is_async(self, request: Any) -> bool:
        return False

    def run(self, *args: Any) -> Any:
        raise self._error()


class _Stub:
    """Records the RPCs a work item's job makes."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.made = threading.Semaphore(0)

    def __getattr__(self, name: str) -> Any:
        def call(request: Any, timeout: float | None = None) -> None:
            self.calls.append(name)
            self.made.release()

        return call


def _handler(error: type[BaseException]) -> tuple[WorkItemHandler, WorkItemPools]:
    pools = WorkItemPools({kind: 1 for kind in WorkKind}, max_threads=2, logger=LOG)
    pools.start()
    runner: Any = _Raising(error)
    registry = Registry()
    registry.add_entity(lambda ctx, value: None, name="e")  # so the batch below goes to the (raising) runner
    handler = WorkItemHandler(
        pools, runner, runner, CompletionSender(LOG), registry=registry, logger=LOG, entities=runner
    )
    return handler, pools


def _items() -> list[tuple[pb.WorkItem, str]]:
    activity = pb.WorkItem(
        activityRequest=pb.ActivityRequest(name="a", taskId=1, orchestrationInstance=pb.OrchestrationInstance(
            instanceId="i")), completionToken="t1")
    orchestration = pb.WorkItem(orchestratorRequest=pb.OrchestratorRequest(instanceId="i"), completionToken="t2")
    entity = pb.WorkItem(entityRequest=pb.EntityBatchRequest(instanceId="@e@k"), completionToken="t3")
    return [
        (activity, "AbandonTaskActivityWorkItem"),
        (orchestration, "AbandonTaskOrchestratorWorkItem"),
        (entity, "AbandonTaskEntityWorkItem"),
    ]


@pytest.mark.parametrize("error", [SystemExit, KeyboardInterrupt, RuntimeError])
def test_a_runner_that_raises_hands_its_work_item_back_and_frees_the_slot(error: type[BaseException]) -> None:
    handler, pools = _handler(error)
    try:
        for item, abandonment in _items():
            stub = _Stub()
            for _ in range(2):  # one slot per kind: the second waits for the first's to come back
                finished = threading.Event()
                handler(item, stub, finished.set)
                assert finished.wait(WAIT) and stub.made.acquire(timeout=WAIT)
            assert stub.calls == [abandonment, abandonment]
        assert pools.wait_idle(WAIT)
    finally:
        pools.close(wait=True)
