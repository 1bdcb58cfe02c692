"""Orchestration turns run on the stream's thread, their completions sent without it waiting; activities stay on
their pool; a turn that must fetch its history first goes to the pool (a real worker against the fake sidecar)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from conftest import FAST
from worker_fakes import Server, activity_item, orchestration_item

from durabletask import task
from durabletask.worker import (
    TaskHubGrpcWorker,
    VersionFailureStrategy,
    VersioningOptions,
    VersionMatchStrategy,
)

STREAM_THREAD = "durabletask-work-items"
ran_on: dict[str, str] = {}


def orch(ctx: task.OrchestrationContext, _: Any) -> str:
    ran_on["orchestration"] = threading.current_thread().name
    return ctx.instance_id


def echo(ctx: task.ActivityContext, value: Any) -> Any:
    ran_on["activity"] = threading.current_thread().name
    return value


@pytest.fixture
def worker(server: Server, logger: logging.Logger) -> Iterator[TaskHubGrpcWorker]:
    ran_on.clear()
    w = TaskHubGrpcWorker(host_address=server.address, logger=logger, resiliency_options=FAST)
    w.add_orchestrator(orch)
    w.add_activity(echo)
    yield w
    w.stop()


def test_a_turn_runs_on_the_stream_s_thread_and_an_activity_on_its_pool(
    server: Server, worker: TaskHubGrpcWorker
) -> None:
    worker.start()
    stream = server.sidecar.next_stream()
    stream.send(orchestration_item("o-1", token="t-1"))
    rpc, response = server.sidecar.next_completion()
    assert (rpc, response.completionToken) == ("CompleteOrchestratorTask", "t-1")
    assert json.loads(response.actions[0].completeOrchestration.result.value) == "o-1"
    assert ran_on["orchestration"] == STREAM_THREAD

    stream.send(activity_item("echo", '"x"', token="t-2"))
    rpc, response = server.sidecar.next_completion()
    assert (rpc, json.loads(response.result.value)) == ("CompleteActivityTask", "x")
    assert ran_on["activity"].startswith("durabletask-activity")


def test_a_turn_that_must_fetch_its_history_runs_on_the_pool(
    server: Server, worker: TaskHubGrpcWorker, caplog: pytest.LogCaptureFixture
) -> None:
    item = orchestration_item("o-2", token="t-3")
    item.orchestratorRequest.requiresHistoryStreaming = True
    worker.start()
    with caplog.at_level(logging.WARNING, logger="durabletask-worker-tests"):
        server.sidecar.next_stream().send(item)
        # The fake sidecar cannot stream histories, so the turn is handed back after trying.
        rpc, response = server.sidecar.next_completion()
    assert (rpc, response.completionToken) == ("AbandonTaskOrchestratorWorkItem", "t-3")
    fetched = [r for r in caplog.records if "could not fetch the history" in r.getMessage()]
    assert len(fetched) == 1 and fetched[0].threadName.startswith("durabletask-orchestration")


def test_a_turn_s_completion_is_retried_without_holding_up_the_stream(
    server: Server, worker: TaskHubGrpcWorker
) -> None:
    server.sidecar.reject("CompleteOrchestratorTask", grpc.StatusCode.UNAVAILABLE, "restarting", token="t-4")
    worker.start()
    stream = server.sidecar.next_stream()
    stream.send(orchestration_item("o-4", token="t-4"))
    stream.send(activity_item("echo", "1", token="t-5"))
    # The activity read after the turn is done while the turn's completion waits for its retry.
    first, second = server.sidecar.next_completion(), server.sidecar.next_completion()
    assert [(rpc, r.completionToken) for rpc, r in (first, second)] == [
        ("CompleteActivityTask", "t-5"),
        ("CompleteOrchestratorTask", "t-4"),
    ]


def test_a_turn_handed_back_is_abandoned_from_the_stream_s_thread(server: Server, worker: TaskHubGrpcWorker) -> None:
    worker.use_versioning(
        VersioningOptions(
            version="2",
            match_strategy=VersionMatchStrategy.STRICT,
            failure_strategy=VersionFailureStrategy.REJECT,
        )
    )
    worker.start()
    server.sidecar.next_stream().send(orchestration_item("o-6", version="1", token="t-6"))
    rpc, response = server.sidecar.next_completion()
    assert (rpc, response.completionToken) == ("AbandonTaskOrchestratorWorkItem", "t-6")
    assert "orchestration" not in ran_on  # the code never ran
