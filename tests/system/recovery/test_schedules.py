"""Schedules start each due run exactly once: across a worker SIGKILLed while firing, and with two workers."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta
from pathlib import Path

from durabletask.scheduled import ScheduleCreationOptions, ScheduledTaskClient
from tests.support.reliability import wait_done, wait_until

from .conftest import Cluster

APP = Path(__file__).with_name("schedule_worker_app.py")
SECOND = timedelta(seconds=1)


def start_worker(cluster: Cluster) -> subprocess.Popen[str]:
    return cluster.start_app(APP, cluster.address, str(cluster.ledger.path), str(cluster.folder),
                             log=cluster.folder / "w.log")


def runs(cluster: Cluster, schedule_id: str) -> list[str]:
    return sorted(k for k in cluster.ledger.effects() if k.startswith(f"{schedule_id}-"))


def due_of(schedule_id: str, run: str) -> datetime:
    return datetime.fromisoformat(run[len(schedule_id) + 1 :])


def started_once(cluster: Cluster, run: str) -> None:
    wait_done(cluster.client, [run], 60)
    assert cluster.history_kinds(run).count("executionStarted") == 1


def test_a_worker_killed_while_firing_leaves_the_run_to_the_next_worker_and_it_starts_once(cluster: Cluster) -> None:
    (cluster.folder / "block").write_text("")
    first = start_worker(cluster)
    schedules = ScheduledTaskClient(cluster.client, operation_timeout=60)
    schedules.create_schedule(ScheduleCreationOptions("kill", "report", 2 * SECOND))
    wait_until(lambda: (cluster.folder / "firing").exists(), 60, "the first worker to be firing a run")
    run = (cluster.folder / "firing").read_text()
    cluster.kill_worker(first)
    # Killed before its batch's result reached the backend: nothing of that firing took effect.
    assert cluster.client.get_orchestration_state(run) is None

    (cluster.folder / "block").unlink()
    start_worker(cluster)
    wait_until(lambda: cluster.client.get_orchestration_state(run) is not None, 120, "the run after recovery")
    started_once(cluster, run)
    assert cluster.ledger.attempts()[run] == 2  # decided by the killed worker and again by the next one
    later = due_of("kill", run)
    wait_until(lambda: any(due_of("kill", r) > later for r in runs(cluster, "kill")), 60, "the next due run")
    for r in runs(cluster, "kill"):
        if r != run:
            assert cluster.ledger.attempts()[r] == 1, r


def test_two_workers_start_each_due_run_once(cluster: Cluster) -> None:
    start_worker(cluster)
    start_worker(cluster)
    ScheduledTaskClient(cluster.client, operation_timeout=60).create_schedule(
        ScheduleCreationOptions("two", "report", SECOND)
    )
    wait_until(lambda: len(runs(cluster, "two")) >= 4, 90, "four runs")
    attempts = cluster.ledger.attempts()
    found = runs(cluster, "two")
    assert all(attempts[r] == 1 for r in found), {r: attempts[r] for r in found}
    for r in found:
        started_once(cluster, r)
