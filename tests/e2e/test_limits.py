"""Work over a size limit fails, with the limit named, instead of being retried forever.

Our SDK checks the 1 MiB payload limit itself before sending; the emulators here have lower limits so
that the emulator's own refusal is what the worker meets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dtscale_emulator.limits import Limits
from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker

from .conftest import Hub

pytestmark = pytest.mark.adversarial

FAILED = client.OrchestrationStatus.FAILED
LIMIT = 256 * 1024


def huge(ctx: task.ActivityContext, size: int) -> str:
    return "x" * size


def calls_huge(ctx: task.OrchestrationContext, size: int) -> Any:
    return (yield ctx.call_activity(huge, input=size))


def returns_huge(ctx: task.OrchestrationContext, size: int) -> str:
    return "x" * size


def fan_out(ctx: task.OrchestrationContext, count: int) -> Any:
    return (yield task.when_all([ctx.call_activity(huge, input=1) for _ in range(count)]))


@pytest.fixture
def limited() -> Iterator[tuple[client.TaskHubGrpcClient, worker.TaskHubGrpcWorker]]:
    limits = Limits(max_payload_bytes=LIMIT, max_history_events=40)
    with EmulatorServer(port=0, in_memory=True, limits=limits) as server:
        w = worker.TaskHubGrpcWorker(host_address=server.address)
        w.add_orchestrator(calls_huge)
        w.add_orchestrator(returns_huge)
        w.add_orchestrator(fan_out)
        w.add_activity(huge)
        w.start()
        c = client.TaskHubGrpcClient(host_address=server.address)
        try:
            yield c, w
        finally:
            c.close()
            w.stop()


def _failure(c: client.TaskHubGrpcClient, iid: str) -> task.FailureDetails:
    # Well within the emulator's five-minute lease timeout, after which the same work would have run again.
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == FAILED and state.failure_details is not None
    return state.failure_details


def test_an_activity_result_over_the_emulators_limit_fails_the_orchestration(
    limited: tuple[client.TaskHubGrpcClient, worker.TaskHubGrpcWorker],
) -> None:
    c, _ = limited
    failure = _failure(c, c.schedule_new_orchestration(calls_huge, input=2 * LIMIT))
    assert f"the limit is {LIMIT} bytes" in failure.message and "'huge'" in failure.message


def test_an_orchestration_output_over_the_emulators_limit_fails_it(
    limited: tuple[client.TaskHubGrpcClient, worker.TaskHubGrpcWorker],
) -> None:
    c, _ = limited
    failure = _failure(c, c.schedule_new_orchestration(returns_huge, input=2 * LIMIT))
    assert failure.error_type == "PayloadTooLarge" and f"the limit is {LIMIT} bytes" in failure.message


def test_a_turn_over_the_history_limit_fails_the_orchestration(
    limited: tuple[client.TaskHubGrpcClient, worker.TaskHubGrpcWorker],
) -> None:
    c, _ = limited
    failure = _failure(c, c.schedule_new_orchestration(fan_out, input=50))
    assert failure.error_type == "HistoryTooLarge" and "history limit of 40 events" in failure.message


def test_an_activity_returning_2_mib_fails_the_orchestration(hub: Hub) -> None:
    hub.start_worker([calls_huge], [huge])
    c = hub.client()
    failure = _failure(c, c.schedule_new_orchestration(calls_huge, input=2 * 1024 * 1024))
    assert "1048576 bytes" in failure.message
