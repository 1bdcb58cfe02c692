"""Our sync and async clients against Microsoft's in-memory backend and worker (the interop peer)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from durabletask import client, history
from durabletask.entities import EntityInstanceId, EntityMetadata
from tests.conftest import peer_python

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("peer_backend.py")
COMPLETED = client.OrchestrationStatus.COMPLETED


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def peer_address() -> Iterator[str]:
    python = peer_python()
    if python is None:
        pytest.skip("Microsoft's durabletask package (the interop peer) is not installed")
    port = free_port()
    # -I keeps this repository's durabletask package off the peer's import path.
    proc = subprocess.Popen(
        [str(python), "-I", str(SCRIPT), str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd="/",
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    if line.strip() != "READY":
        proc.kill()
        pytest.fail(f"the peer backend did not start (said {line!r}, exit code {proc.poll()})")
    yield f"localhost:{port}"
    proc.stdin.close()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()


@pytest.fixture
def c(peer_address: str) -> Iterator[client.TaskHubGrpcClient]:
    with client.TaskHubGrpcClient(host_address=peer_address) as sync_client:
        yield sync_client


def new_id() -> str:
    return f"peer-{uuid.uuid4().hex[:12]}"


def test_schedule_wait_and_read_state(c: client.TaskHubGrpcClient) -> None:
    iid = c.schedule_new_orchestration("chain", input=3, instance_id=new_id(), tags={"k": "v"})
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED
    assert state.get_output() == 12 and state.get_input() == 3 and state.instance_id == iid
    assert state.created_at <= state.last_updated_at
    again = c.get_orchestration_state(iid, fetch_payloads=False)
    assert again is not None and again.serialized_output is None and again.name == "chain"
    assert c.get_orchestration_state(new_id()) is None


def test_failure_details_and_raise_if_failed(c: client.TaskHubGrpcClient) -> None:
    iid = c.schedule_new_orchestration("failing", instance_id=new_id())
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    assert state.failure_details is not None and "kaput" in state.failure_details.message
    with pytest.raises(client.OrchestrationFailedError, match="kaput"):
        state.raise_if_failed()


def test_events_custom_status_suspend_resume_and_history(c: client.TaskHubGrpcClient) -> None:
    iid = c.schedule_new_orchestration("waiter", instance_id=new_id())
    started = c.wait_for_orchestration_start(iid, timeout=30)
    assert started is not None
    c.suspend_orchestration(iid, reason="pause")
    # The backend applies suspend asynchronously; poll its state within a deadline.
    suspended = _poll_status(c, iid, client.OrchestrationStatus.SUSPENDED)
    assert suspended.runtime_status == client.OrchestrationStatus.SUSPENDED
    c.resume_orchestration(iid, reason="go on")
    c.raise_orchestration_event(iid, "go", data={"n": 1})
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.get_output() == {"n": 1}
    assert state.get_custom_status() == "waiting"
    events = c.get_orchestration_history(iid)
    assert isinstance(events[0], history.OrchestratorStartedEvent | history.ExecutionStartedEvent)
    raised = [e for e in events if isinstance(e, history.EventRaisedEvent)]
    assert [(e.name, json.loads(e.input or "null")) for e in raised] == [("go", {"n": 1})]
    assert any(isinstance(e, history.ExecutionSuspendedEvent) for e in events)
    assert isinstance(events[-1], history.OrchestratorCompletedEvent | history.ExecutionCompletedEvent)


def test_terminate_and_purge(c: client.TaskHubGrpcClient) -> None:
    iid = c.schedule_new_orchestration("waiter", instance_id=new_id())
    c.wait_for_orchestration_start(iid, timeout=30)
    c.terminate_orchestration(iid, output="stopped")
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.TERMINATED
    assert state.get_output() == "stopped"
    result = c.purge_orchestration(iid)
    assert result.deleted_instance_count == 1
    assert c.get_orchestration_state(iid) is None


def test_query_and_list(c: client.TaskHubGrpcClient) -> None:
    prefix = f"q-{uuid.uuid4().hex[:8]}-"
    ids = [c.schedule_new_orchestration("echo", input=i, instance_id=f"{prefix}{i}") for i in range(3)]
    for iid in ids:
        c.wait_for_orchestration_completion(iid, timeout=30)
    states = c.get_all_orchestration_states(
        client.OrchestrationQuery(instance_id_prefix=prefix, fetch_inputs_and_outputs=True)
    )
    assert sorted(s.instance_id for s in states) == ids
    assert sorted(s.get_output() for s in states) == [0, 1, 2]
    seen: list[str] = []
    page = c.list_instance_ids(runtime_status=[COMPLETED], page_size=2)
    seen.extend(page.items)
    while page.continuation_token:
        page = c.list_instance_ids(runtime_status=[COMPLETED], page_size=2, continuation_token=page.continuation_token)
        seen.extend(page.items)
    assert set(ids) <= set(seen)


def test_wait_timeout_raises_timeout_error(c: client.TaskHubGrpcClient) -> None:
    iid = c.schedule_new_orchestration("waiter", instance_id=new_id())
    with pytest.raises(TimeoutError):
        c.wait_for_orchestration_completion(iid, timeout=0.5)
    c.terminate_orchestration(iid)


def test_entities(c: client.TaskHubGrpcClient) -> None:
    entity = EntityInstanceId("counter", new_id())
    c.signal_entity(entity, "add", 5)
    c.signal_entity(entity, "add", 2)
    metadata = _poll_entity(c, entity, lambda m: m.get_typed_state(int) == 7)
    assert metadata.id == entity and metadata.includes_state
    without = c.get_entity(entity, include_state=False)
    assert without is not None and without.get_state() is None
    found = c.get_all_entities(client.EntityQuery(instance_id_starts_with="@counter@peer-"))
    assert entity in {m.id for m in found}
    assert c.get_entity(EntityInstanceId("counter", new_id())) is None


async def test_async_client_full_flow(peer_address: str) -> None:
    async with client.AsyncTaskHubGrpcClient(host_address=peer_address) as ac:
        iid = await ac.schedule_new_orchestration("waiter", instance_id=new_id())
        assert await ac.wait_for_orchestration_start(iid, timeout=30) is not None
        await ac.raise_orchestration_event(iid, "go", data="async")
        state = await ac.wait_for_orchestration_completion(iid, timeout=30)
        assert state is not None and state.get_output() == "async"
        events = await ac.get_orchestration_history(iid)
        assert any(isinstance(e, history.EventRaisedEvent) for e in events)
        states = await ac.get_all_orchestration_states(client.OrchestrationQuery(instance_id_prefix=iid))
        assert [s.instance_id for s in states] == [iid]
        assert (await ac.purge_orchestration(iid)).deleted_instance_count == 1


# ----------------------------------------------------------------------------------------------- helpers


def _poll_status(
    c: client.TaskHubGrpcClient, iid: str, status: client.OrchestrationStatus
) -> client.OrchestrationState:
    deadline = time.monotonic() + 15
    while True:
        state = c.get_orchestration_state(iid)
        if state is not None and state.runtime_status == status:
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"{iid} never reached {status}; last state {state}")
        time.sleep(0.05)


def _poll_entity(
    c: client.TaskHubGrpcClient, entity: EntityInstanceId, ready: Callable[[EntityMetadata], bool]
) -> EntityMetadata:
    deadline = time.monotonic() + 15
    while True:
        metadata = c.get_entity(entity)
        if metadata is not None and ready(metadata):
            return metadata
        if time.monotonic() > deadline:
            raise AssertionError(f"{entity} never reached the expected state; last {metadata}")
        time.sleep(0.05)
