"""The worker's daemon thread pool, and the names of work that stop() abandons."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import CancelledError

import pytest
from worker_fakes import WAIT

from durabletask._worker.dispatch import WorkItemPools, WorkKind
from durabletask._worker.threads import DaemonThreadPool

LOG = logging.getLogger("durabletask-worker-tests")


def test_the_pool_runs_jobs_on_daemon_threads_up_to_its_limit() -> None:
    pool = DaemonThreadPool(2, "test-pool")
    gate = threading.Event()
    names: list[tuple[str, bool]] = []

    def job() -> int:
        names.append((threading.current_thread().name, threading.current_thread().daemon))
        gate.wait(WAIT)
        return 7

    futures = [pool.submit(job) for _ in range(3)]
    gate.set()
    assert [f.result(WAIT) for f in futures] == [7, 7, 7]
    assert {daemon for _, daemon in names} == {True}
    assert {name for name, _ in names} <= {"test-pool_0", "test-pool_1"}
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError, match="after the pool was shut down"):
        pool.submit(job)


def test_an_idle_thread_is_reused_rather_than_another_started() -> None:
    pool = DaemonThreadPool(4, "test-reuse")
    for _ in range(5):
        pool.submit(lambda: None).result(WAIT)
    assert len({t.name for t in threading.enumerate() if t.name.startswith("test-reuse")}) == 1
    pool.shutdown(wait=True)
    assert not [t for t in threading.enumerate() if t.name.startswith("test-reuse")]


def test_errors_reach_the_future_and_queued_jobs_can_be_cancelled() -> None:
    pool = DaemonThreadPool(1, "test-errors")
    gate = threading.Event()

    def boom() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        pool.submit(boom).result(WAIT)
    started = threading.Event()

    def first() -> bool:
        started.set()
        return gate.wait(WAIT)

    running = pool.submit(first)
    assert started.wait(WAIT)
    queued = pool.submit(lambda: None)
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(CancelledError):
        queued.result(WAIT)
    gate.set()
    assert running.result(WAIT) is True


def test_a_pool_refuses_a_limit_below_one() -> None:
    with pytest.raises(ValueError, match="max_workers must be at least 1"):
        DaemonThreadPool(0, "x")


def test_the_pools_name_the_work_still_running() -> None:
    pools = WorkItemPools({kind: 2 for kind in WorkKind}, max_threads=4, logger=LOG)
    pools.start()
    gate = threading.Event()
    try:
        for kind, what in [(WorkKind.ACTIVITY, "activity 'a' (task 3) of orchestration 'i'"), (WorkKind.ENTITY, None)]:
            assert pools.acquire(kind)
            pools.submit(kind, lambda: gate.wait(WAIT) and None, what=what)
        assert pools.running() == ["activity 'a' (task 3) of orchestration 'i'", "a work item (entity)"]
        assert not pools.wait_idle(0.01)
    finally:
        gate.set()
        assert pools.wait_idle(WAIT)
        assert pools.running() == []
        pools.close(wait=True)
