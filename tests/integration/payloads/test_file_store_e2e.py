"""The folder store end to end: payloads over 1 MiB through the emulator, purge cleanup, and a worker that
cannot fetch a payload."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

import grpc
import pytest

from durabletask import client, entities, task
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.payload import FilePayloadStore, FilePayloadStoreOptions

from .conftest import Side

BIG = 2 * 1024 * 1024


def grow(ctx: task.ActivityContext, size: int) -> str:
    return "z" * size


def orchestrate(ctx: task.OrchestrationContext, size: int) -> Any:
    value = yield ctx.call_activity(grow, input=size)
    return value


@pytest.fixture
def file_side(emulator_port: int, tmp_path: Path) -> Iterator[Side]:
    store = FilePayloadStore(FilePayloadStoreOptions(directory=tmp_path, delete_payloads_on_purge=True))
    with ExitStack() as stack:
        yield Side(emulator_port, store, stack)


def test_results_over_one_mib_and_purge_deletes_them(file_side: Side, tmp_path: Path) -> None:
    file_side.worker(orchestrate, activities=(grow,))
    c = file_side.client()
    iid = c.schedule_new_orchestration(orchestrate, input=BIG)
    state = c.wait_for_orchestration_completion(iid, timeout=60)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert json.loads(state.serialized_output or "") == "z" * BIG
    stored = list((tmp_path / "durabletask-payloads" / iid).iterdir())
    assert len(stored) == 2  # the activity's result and the orchestration's output
    assert c.purge_orchestration(iid).deleted_instance_count == 1
    assert not (tmp_path / "durabletask-payloads" / iid).exists()


def test_purge_keeps_payloads_unless_asked(emulator_port: int, tmp_path: Path) -> None:
    with ExitStack() as stack:
        side = Side(emulator_port, FilePayloadStore(tmp_path), stack)
        side.worker(orchestrate, activities=(grow,))
        c = side.client()
        iid = c.schedule_new_orchestration(orchestrate, input=BIG)
        c.wait_for_orchestration_completion(iid, timeout=60)
        c.purge_orchestration(iid)
        assert len(list((tmp_path / "durabletask-payloads" / iid).iterdir())) == 2


def reads(ctx: task.OrchestrationContext, value: str) -> int:
    return len(value)


def test_a_worker_that_cannot_fetch_the_input_fails_the_orchestration(file_side: Side, tmp_path: Path) -> None:
    c = file_side.client()
    iid = c.schedule_new_orchestration(reads, input="w" * BIG)
    for blob in (tmp_path / "durabletask-payloads" / iid).iterdir():
        blob.unlink()
    file_side.worker(reads)
    state = c.wait_for_orchestration_completion(iid, timeout=60, fetch_payloads=False)
    assert state is not None and state.runtime_status == client.OrchestrationStatus.FAILED
    assert state.failure_details is not None
    message = state.failure_details.message
    assert f"instance '{iid}'" in message and "executionStarted.input" in message, message


def test_without_a_store_the_emulators_limit_error_points_to_payload_store(emulator_port: int) -> None:
    raw = client.TaskHubGrpcClient(host_address=f"localhost:{emulator_port}")
    request = pb.RaiseEventRequest(instanceId="nobody", name="e")
    request.input.value = "q" * (1024 * 1024 + 1)
    with pytest.raises(grpc.RpcError) as caught:
        raw._stub.RaiseEvent(request)  # past the client's own check, as another SDK would send it
    raw.close()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "input is 1048577 bytes; the limit is 1048576 bytes" in str(caught.value.details())
    assert "payload_store=" in str(caught.value.details())


def box(ctx: entities.EntityContext, value: Any) -> Any:
    if ctx.operation == "put":
        ctx.set_state(value)
    return None


def test_entity_state_is_stored_under_the_entity(file_side: Side, tmp_path: Path) -> None:
    file_side.worker(entities=(box,))
    c = file_side.client()
    entity = entities.EntityInstanceId("box", "k1")
    c.signal_entity(entity, "put", "e" * BIG)
    folder = tmp_path / "durabletask-payloads" / quote("@box@k1", safe="")
    for _ in range(200):  # signals are one-way: nothing to block on
        found = c.get_entity(entity)
        if found is not None:
            break
        time.sleep(0.05)
    assert found is not None and json.loads(found.get_state(str)) == "e" * BIG
    # The signal's input and the state the batch result carried, both filed under the entity's ID.
    assert len(list(folder.iterdir())) == 2


class FlakyStore(FilePayloadStore):
    """A folder store whose first reads fail as an unreachable store's would."""

    def __init__(self, folder: Path, failures: int) -> None:
        super().__init__(folder)
        self.failures = failures

    def download(self, token: str) -> bytes:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("the store is unreachable")
        return super().download(token)


def test_a_store_that_is_down_hands_the_work_item_back(emulator_port: int, tmp_path: Path) -> None:
    with ExitStack() as stack:
        side = Side(emulator_port, FilePayloadStore(tmp_path), stack)
        c = side.client()
        iid = c.schedule_new_orchestration(reads, input="w" * BIG)
        flaky = FlakyStore(tmp_path, failures=2)
        side.worker(reads, store=flaky)
        state = c.wait_for_orchestration_completion(iid, timeout=60)
        assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
        assert state.serialized_output == str(BIG) and flaky.failures == 0


def test_the_worker_advertises_large_payload_support(tmp_path: Path) -> None:
    from durabletask import worker

    with_store = worker.TaskHubGrpcWorker(host_address="localhost:1", payload_store=FilePayloadStore(tmp_path))
    without = worker.TaskHubGrpcWorker(host_address="localhost:1")
    assert pb.WORKER_CAPABILITY_LARGE_PAYLOADS in with_store._work_items_request().capabilities
    assert pb.WORKER_CAPABILITY_LARGE_PAYLOADS not in without._work_items_request().capabilities


def test_scheduler_client_and_worker_take_the_store(emulator_port: int, tmp_path: Path) -> None:
    from durabletask.azuremanaged.client import DurableTaskSchedulerClient
    from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

    store = FilePayloadStore(tmp_path)
    where = {
        "host_address": f"localhost:{emulator_port}",
        "taskhub": "dts-payloads",
        "token_credential": None,
        "secure_channel": False,
    }
    with DurableTaskSchedulerWorker(**where, payload_store=store) as w:
        w.add_orchestrator(orchestrate)
        w.add_activity(grow)
        w.start()
        c = DurableTaskSchedulerClient(**where, payload_store=store)
        iid = c.schedule_new_orchestration(orchestrate, input=BIG)
        state = c.wait_for_orchestration_completion(iid, timeout=60)
        c.close()
    assert state is not None and json.loads(state.serialized_output or "") == "z" * BIG
    assert len(list((tmp_path / "durabletask-payloads" / iid).iterdir())) == 2


class GatedStore(FilePayloadStore):
    """Fetching a payload stored for the instance ``slow`` waits until the test opens the gate."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.waiting = threading.Event()
        self.gate = threading.Event()

    def download(self, token: str) -> bytes:
        if ":slow/" in token:
            self.waiting.set()
            self.gate.wait(120)
        return super().download(token)


def test_a_slow_store_holds_up_only_the_work_item_it_is_fetching_for(emulator_port: int, tmp_path: Path) -> None:
    store = GatedStore(tmp_path)
    with ExitStack() as stack:
        side = Side(emulator_port, store, stack)
        side.worker(reads)
        c = side.client()
        try:
            slow = c.schedule_new_orchestration(reads, input="s" * BIG, instance_id="slow")
            assert store.waiting.wait(30)
            fast = c.schedule_new_orchestration(reads, input="small", instance_id="fast")
            state = c.wait_for_orchestration_completion(fast, timeout=30)
            assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
            assert not store.gate.is_set()  # the other orchestration's payload is still being fetched
        finally:
            store.gate.set()
        done = c.wait_for_orchestration_completion(slow, timeout=60)
        assert done is not None and done.runtime_status == client.OrchestrationStatus.COMPLETED
        assert json.loads(done.serialized_output or "") == BIG
