"""The deploy-check sample's releases under the pytest plugin's fixtures: the check blocks and passes the releases
the sample says, and on a time-skipping backend a monthly subscription continues into version 2 at once."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from durabletask import client
from durabletask.testing import InMemoryOrchestrationBackend, ReplayChecker, Verdict, histories_from_client

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "samples"))

import replay_check_deploy as sample

pytestmark = pytest.mark.local_only("runs the sample's orchestrators on the plugin's in-process backend")
MONTH = 30 * 86400


def _running(c: client.TaskHubGrpcClient) -> Any:
    return histories_from_client(c, statuses=[client.OrchestrationStatus.RUNNING])


def _wait_for(c: client.TaskHubGrpcClient, instance_id: str, needle: str) -> None:
    sample.wait_for_custom_status(c, instance_id, needle, timeout=30)


@pytest.mark.durabletask_time_skipping
def test_the_checked_release_moves_a_monthly_subscription_to_version_2(
    durabletask_backend: InMemoryOrchestrationBackend, durabletask_worker: Any, durabletask_client: Any
) -> None:
    c = durabletask_client
    with durabletask_backend.time_skipping_paused():  # the subscription waits in its first period meanwhile
        first = sample.register(durabletask_worker(start=False), "1")
        first.start()
        c.schedule_new_orchestration(
            "subscription", instance_id="sub", input={"id": "sub", "period": 0, "period_seconds": MONTH}
        )
        c.schedule_new_orchestration("order", input={"id": "o"}, instance_id="o")
        _wait_for(c, "sub", "period 0 (v1)")
        _wait_for(c, "o", "cooling off")
        verdicts = {
            release: sorted(
                (r.instance_id, r.verdict)
                for r in ReplayChecker(sample.register(sample.worker.TaskHubGrpcWorker(), release))
                .check(_running(c))
                .results
            )
            for release in ("2a", "2b", "2c", "2c-unversioned")
        }
        first.stop()
    ok, broken = Verdict.REPLAYS, Verdict.DIVERGES
    assert verdicts == {
        "2a": [("o", broken), ("sub", ok)],
        "2b": [("o", ok), ("sub", ok)],
        "2c": [("o", ok), ("sub", ok)],
        "2c-unversioned": [("o", ok), ("sub", broken)],
    }
    before = durabletask_backend.now()
    sample.register(durabletask_worker(start=False), "2c").start()
    # The first period ends a month later (skipped), and the subscription continues into version 2.
    _wait_for(c, "sub", "(v2)")
    assert durabletask_backend.now() - before >= timedelta(days=30)
    assert "sub" in sample.fraud_checks
    # What version 2 records replays with the release that runs it.
    assert ReplayChecker(sample.register(sample.worker.TaskHubGrpcWorker(), "2c")).check(_running(c)).ok
