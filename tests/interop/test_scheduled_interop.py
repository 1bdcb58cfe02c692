"""Schedules across SDKs on our emulator: Microsoft's client with our worker, ours with Microsoft's worker, and a
schedule whose runs move from Microsoft's worker to ours. Real time, one-second intervals; nothing is timed, the
tests wait for runs to appear.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from dtscale_emulator.server import EmulatorServer
from durabletask import client, worker
from durabletask.scheduled import (
    ScheduleCreationOptions,
    ScheduledTaskClient,
    ScheduleInvalidTransitionError,
    ScheduleNotFoundError,
    ScheduleQuery,
    ScheduleStatus,
)
from tests.e2e.scheduled_support import report, runs_of, wait_for

from .conftest import peer_env

pytestmark = pytest.mark.interop
SCRIPT = Path(__file__).parent / "peer_scripts" / "schedules.py"
SECOND = timedelta(seconds=1)


@pytest.fixture
def server() -> Iterator[EmulatorServer]:
    with EmulatorServer(port=0, in_memory=True) as srv:
        yield srv


@pytest.fixture
def ours(server: EmulatorServer) -> Iterator[client.TaskHubGrpcClient]:
    c = client.TaskHubGrpcClient(host_address=server.address)
    yield c
    c.close()


def peer_client(peer_py: Path, server: EmulatorServer, op: str, schedule_id: str, **args: Any) -> dict[str, Any]:
    proc = subprocess.run(
        [str(peer_py), str(SCRIPT), "client", server.address, op, schedule_id, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=90,
        env=peer_env(),
        cwd=SCRIPT.parent,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return dict(json.loads(lines[-1]))


class PeerWorker:
    def __init__(self, peer_py: Path, server: EmulatorServer) -> None:
        self.proc = subprocess.Popen(
            [str(peer_py), str(SCRIPT), "worker", server.address],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=peer_env(),
            cwd=SCRIPT.parent,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()  # the worker stops when its stdin closes
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture
def peer_worker(peer_py: Path, server: EmulatorServer) -> Iterator[PeerWorker]:
    made = PeerWorker(peer_py, server)
    yield made
    made.stop()


def our_worker(server: EmulatorServer) -> worker.TaskHubGrpcWorker:
    w = worker.TaskHubGrpcWorker(host_address=server.address)
    w.add_orchestrator(report)
    w.configure_scheduled_tasks()
    w.start()
    return w


def due_of(schedule_id: str, run: str) -> datetime:
    return datetime.fromisoformat(run[len(schedule_id) + 1 :])


def test_microsofts_client_drives_a_schedule_on_our_worker(
    peer_py: Path, server: EmulatorServer, ours: client.TaskHubGrpcClient
) -> None:
    sid = f"ms-{uuid.uuid4().hex[:8]}"
    w = our_worker(server)
    try:
        created = peer_client(peer_py, server, "create", sid, interval=1, start_offset=-10, late=True, input={"a": 1})
        assert created == {"ok": True, "result": None}
        runs = wait_for(lambda: runs_of(ours, sid), "the first run on our worker")
        state = ours.wait_for_orchestration_completion(runs[0], timeout=30)
        assert state is not None and json.loads(state.serialized_output or "null") == {"a": 1}
        due_of(sid, runs[0])  # the run ID is the schedule ID and the due time in ISO form

        seen = peer_client(peer_py, server, "describe", sid)["result"]
        mine = ScheduledTaskClient(ours).get_schedule(sid)
        assert mine is not None and seen["status"] == "Active" and seen["interval"] == 1.0
        assert seen["orchestration_input"] == {"a": 1} and seen["orchestration_name"] == "report"

        assert peer_client(peer_py, server, "pause", sid)["ok"]
        paused = ScheduledTaskClient(ours).get_schedule(sid)
        assert paused is not None and paused.status == ScheduleStatus.PAUSED
        again = peer_client(peer_py, server, "pause", sid)
        assert again["ok"] is False and again["error_type"] == "RuntimeError"
        assert f"Failed to 'pause_schedule' schedule '{sid}'" in again["message"]
        assert "cannot transition from" in again["message"]

        assert peer_client(peer_py, server, "list", sid[:5])["result"] == [sid]
        assert peer_client(peer_py, server, "resume", sid)["ok"]
        assert peer_client(peer_py, server, "delete", sid)["ok"]
        assert ScheduledTaskClient(ours).get_schedule(sid) is None
        missing = peer_client(peer_py, server, "describe", sid)
        assert missing["error_type"] == "ScheduleNotFoundError"
    finally:
        w.stop()


def test_our_client_drives_a_schedule_on_microsofts_worker(
    peer_worker: PeerWorker, server: EmulatorServer, ours: client.TaskHubGrpcClient
) -> None:
    sid = f"py-{uuid.uuid4().hex[:8]}"
    schedules = ScheduledTaskClient(ours, operation_timeout=30)
    start = datetime.now(timezone.utc) - 10 * SECOND
    options = ScheduleCreationOptions(sid, "report", SECOND, {"x": 1}, start_at=start, start_immediately_if_late=True)
    handle = schedules.create_schedule(options)
    runs = wait_for(lambda: runs_of(ours, sid), "the first run on Microsoft's worker")
    state = ours.wait_for_orchestration_completion(runs[0], timeout=30)
    assert state is not None and json.loads(state.serialized_output or "null") == {"x": 1}

    described = handle.describe()  # the state Microsoft's entity wrote
    assert described.status == ScheduleStatus.ACTIVE and described.interval == SECOND
    assert described.orchestration_input == {"x": 1} and described.start_at == start

    handle.pause()
    with pytest.raises(RuntimeError, match="cannot transition") as refused:
        handle.pause()
    assert isinstance(refused.value, ScheduleInvalidTransitionError)
    assert refused.value.from_status == ScheduleStatus.PAUSED  # read from Microsoft's "ScheduleStatus.PAUSED"
    with pytest.raises(ScheduleNotFoundError):
        schedules.get_schedule_client(f"{sid}-none").resume()
    assert [d.schedule_id for d in schedules.list_schedules(ScheduleQuery(schedule_id_prefix=sid))] == [sid]
    handle.delete()
    assert schedules.get_schedule(sid) is None


def test_a_schedule_moves_from_microsofts_worker_to_ours(
    peer_worker: PeerWorker, server: EmulatorServer, ours: client.TaskHubGrpcClient
) -> None:
    sid = f"move-{uuid.uuid4().hex[:8]}"
    ScheduledTaskClient(ours, operation_timeout=30).create_schedule(ScheduleCreationOptions(sid, "report", SECOND))
    before = wait_for(lambda: runs_of(ours, sid), "a run by Microsoft's worker")
    peer_worker.stop()
    w = our_worker(server)
    try:
        last = max(due_of(sid, r) for r in runs_of(ours, sid))
        later = wait_for(
            lambda: [r for r in runs_of(ours, sid) if due_of(sid, r) > last] or None,
            "a run by our worker, from the wake-up Microsoft's entity armed",
        )
        assert later and before
        dues = [due_of(sid, r) for r in runs_of(ours, sid)]
        assert len(dues) == len(set(dues))
    finally:
        w.stop()


def test_microsofts_client_reads_a_cron_schedule_as_an_interval_schedule(
    peer_py: Path, server: EmulatorServer, ours: client.TaskHubGrpcClient
) -> None:
    sid = f"cron-{uuid.uuid4().hex[:8]}"
    w = our_worker(server)
    try:
        ScheduledTaskClient(ours, operation_timeout=30).create_schedule(
            ScheduleCreationOptions(sid, "report", cron="0 2 * * *", time_zone="Europe/Paris")
        )
        seen = peer_client(peer_py, server, "describe", sid)
        assert seen["ok"], seen
        assert seen["result"]["interval"] == 86400.0 and seen["result"]["status"] == "Active"
        assert peer_client(peer_py, server, "list", sid)["result"] == [sid]
    finally:
        w.stop()
