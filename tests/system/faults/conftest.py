"""Fault-test harness: an in-process emulator on a SQLite file, a fast-reconnecting worker, and an effect ledger."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import grpc
import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker
from durabletask.grpc_options import GrpcWorkerResiliencyOptions
from tests.support.reliability import (
    Ledger,
    assert_exactly_once,
    fetch_history,
    save_history,
    wait_done,
    wait_until,
)

STEPS = 3
Client = client.TaskHubGrpcClient  # the Rig's own method is called client
# Short enough that a stalled stream is noticed quickly, long enough to stay well above the ping interval.
RESILIENCY = GrpcWorkerResiliencyOptions(
    hello_timeout_seconds=5,
    silent_disconnect_timeout_seconds=1.5,
    reconnect_backoff_base_seconds=0.05,
    reconnect_backoff_cap_seconds=0.5,
)


def pipeline(ctx: task.OrchestrationContext, size: int) -> Any:
    """Three effects, each keyed by the instance and step so a redelivered activity cannot apply twice."""
    done = []
    for step in range(size):
        done.append((yield ctx.call_activity("effect", input=f"{ctx.instance_id}/{step}")))
    return done


class Rig:
    """One emulator, one worker and one client, all for a single test."""

    def __init__(self, tmp: Path, stack: ExitStack) -> None:
        self.ledger = Ledger(tmp / "ledger.db")
        self.server = EmulatorServer(port=0, db_path=str(tmp / "emu.db"), health_ping_interval=0.3, lease_timeout=30)
        self.server.start()
        stack.callback(self.server.close)
        self.stack = stack
        self.slow = threading.Event()  # set: activities take a little time, so faults land mid-run

    @property
    def address(self) -> str:
        return self.server.address

    def effect(self, ctx: task.ActivityContext, key: str) -> str:
        if self.slow.is_set():
            threading.Event().wait(0.05)  # simulated work, not a wait for a condition
        self.ledger.apply(key)
        return key

    def start_worker(self) -> worker.TaskHubGrpcWorker:
        w = worker.TaskHubGrpcWorker(host_address=self.address, resiliency_options=RESILIENCY)
        w.add_orchestrator(pipeline)
        w.add_activity(self.effect, name="effect")
        w.start()
        self.stack.callback(w.stop)
        return w

    def reachable_client(self, timeout: float = 10.0) -> client.TaskHubGrpcClient:
        """A client whose own channel has reached the server again after restarts.

        After a refused connection, gRPC fails a channel's new calls at once until its reconnect backoff has
        passed, and a start is a write that no client retries; so a read on this very client must answer first.
        """
        c = self.client()

        def answers() -> bool:
            try:
                c.get_orchestration_state("rig-reachability-probe")
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                return False
            return True

        wait_until(answers, timeout, "the client's channel to reach the server again")
        return c

    def client(self) -> client.TaskHubGrpcClient:
        c = client.TaskHubGrpcClient(host_address=self.address)
        self.stack.callback(c.close)
        return c

    def schedule(self, count: int, via: Client | None = None) -> list[str]:
        c = via or self.client()
        return [
            c.schedule_new_orchestration(pipeline, input=STEPS, instance_id=f"f-{uuid.uuid4().hex[:10]}")
            for _ in range(count)
        ]

    def run(self, count: int, timeout: float = 60.0, via: Client | None = None) -> list[str]:
        ids = self.schedule(count, via)
        wait_all(via or self.client(), ids, timeout)
        return ids

    def verify(self, ids: Sequence[str], artifact: str) -> None:
        """Every run completed once with every step; each effect was applied exactly once."""
        c = self.client()
        for iid in ids:
            state = c.get_orchestration_state(iid)
            assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
            assert json.loads(state.serialized_output or "null") == [f"{iid}/{s}" for s in range(STEPS)]
            events = fetch_history(self.address, iid)
            assert_exactly_once(events)
        save_history(artifact, fetch_history(self.address, ids[0]))
        expected = {f"{iid}/{s}" for iid in ids for s in range(STEPS)}
        assert set(self.ledger.effects()) == expected


def wait_all(c: client.TaskHubGrpcClient, ids: Sequence[str], timeout: float) -> None:
    wait_done(c, ids, timeout)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    with ExitStack() as stack:
        yield Rig(tmp_path, stack)
