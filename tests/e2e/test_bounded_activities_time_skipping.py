"""Bounded activity calls under the test backend's time skipping: an hour of retry waits bounded by
``schedule_to_close_timeout`` passes at once on the orchestration clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from durabletask import client, task, worker
from durabletask.testing import InMemoryOrchestrationBackend, create_test_backend

pytestmark = pytest.mark.local_only("the test backend's own clock is what is under test")

WAIT = 60


@pytest.fixture(scope="module")
def backend() -> Iterator[InMemoryOrchestrationBackend]:
    made = create_test_backend(port=0, time_skipping=True)
    yield made
    made.stop()


def flaky_upload(ctx: task.ActivityContext, _: Any) -> None:
    raise ConnectionError("the archive is down")


def hourly_bounded(ctx: task.OrchestrationContext, _: Any) -> Any:
    began = ctx.current_utc_datetime
    retry = task.RetryPolicy(first_retry_interval=timedelta(minutes=25), max_number_of_attempts=100)
    call = ctx.call_activity(flaky_upload, schedule_to_close_timeout=timedelta(hours=1), retry_policy=retry)
    try:
        yield call
        return "uploaded"
    except task.ActivityTimeoutError as error:
        waited = (ctx.current_utc_datetime - began).total_seconds() / 60
        return {"timeout": error.timeout_type, "attempts": call.attempt_count, "minutes": waited}


def test_an_hour_bounded_call_ends_at_its_deadline_without_waiting_an_hour(
    backend: InMemoryOrchestrationBackend,
) -> None:
    w = worker.TaskHubGrpcWorker(host_address=backend.address)
    w.add_orchestrator(hourly_bounded)
    w.add_activity(flaky_upload)
    w.start()
    c = client.TaskHubGrpcClient(host_address=backend.address)
    try:
        instance_id = c.schedule_new_orchestration(hourly_bounded)
        state = c.wait_for_orchestration_completion(instance_id, timeout=WAIT)
        assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
        result = json.loads(state.serialized_output or "null")
        # Attempts at 0, 25 and 50 minutes; a fourth at 75 could not start before the hour: the deadline ends the
        # call, 50 minutes later on the orchestration clock.
        assert result["timeout"] == "schedule_to_close" and result["attempts"] == 3
        assert 50 <= result["minutes"] < 51
    finally:
        w.stop()
        c.close()
