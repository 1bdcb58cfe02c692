"""Task hub limits (name length, count) and task hub deletion in bounded chunks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc
import pytest

from dtscale_emulator.engine import queries
from dtscale_emulator.rpc import hubs
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import InstanceQueryArgs, InstanceRecord, SqliteBackend
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, start, uid


@pytest.fixture
def dynamic() -> Iterator[EmulatorServer]:
    with EmulatorServer(port=0, in_memory=True, dynamic_task_hubs=True) as server:
        yield server


def test_a_dynamic_hub_name_over_the_limit_is_refused(dynamic: EmulatorServer) -> None:
    with grpc.insecure_channel(dynamic.address) as channel:
        with pytest.raises(grpc.RpcError) as err:
            start(HubStub(channel, "h" * (hubs.MAX_HUB_NAME + 1)))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert f"the limit is {hubs.MAX_HUB_NAME}" in (err.value.details() or "")
        start(HubStub(channel, "h" * hubs.MAX_HUB_NAME))
        with pytest.raises(grpc.RpcError) as err:
            HubStub(channel, "x" * 65).CreateTaskHub(pb.CreateTaskHubRequest())
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_dynamic_hubs_stop_at_the_count_limit(dynamic: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hubs, "MAX_HUBS", 3)
    with grpc.insecure_channel(dynamic.address) as channel:
        start(HubStub(channel, "one"))
        start(HubStub(channel, "two"))  # with "default": three hubs
        with pytest.raises(grpc.RpcError) as err:
            start(HubStub(channel, "three"))
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "at most 3 task hubs" in (err.value.details() or "")
        start(HubStub(channel, "one"))  # existing hubs keep working
        HubStub(channel, "one").DeleteTaskHub(pb.DeleteTaskHubRequest())
        start(HubStub(channel, "three"))  # room again


def _fill(backend: SqliteBackend, hub: str, count: int) -> None:
    with backend.transaction() as tx:
        for i in range(count):
            tx.put_instance(InstanceRecord(hub, f"i{i}", "e", "Done", pb.ORCHESTRATION_STATUS_COMPLETED, 1, 2))
            tx.append_history(hub, f"i{i}", [b"x", b"y"])
            tx.add_message(hub, f"i{i}", b"m", 0)


@pytest.mark.adversarial
def test_deleting_a_hub_works_in_chunks_and_serves_calls_between_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hubs, "DELETE_CHUNK", 10)
    with (
        EmulatorServer(port=0, in_memory=True, task_hubs=("default", "doomed")) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        _fill(server.backend, "doomed", 50)
        other = HubStub(channel, "default")
        chunks: list[int] = []
        original = server.backend._tx.delete_hub_rows
        monkeypatch.setattr(
            server.backend._tx, "delete_hub_rows", lambda hub, limit: chunks.append(original(hub, limit)) or chunks[-1]
        )
        served: list[str] = []

        async def serve_one_call_between_chunks() -> None:
            # The first pause starts a call on another hub and waits for its answer: only a deletion that leaves
            # the event loop free between chunks lets it through.
            if served:
                return
            started = asyncio.get_running_loop().run_in_executor(
                None, lambda: other.StartInstance(pb.CreateInstanceRequest(instanceId=uid(), name="During"))
            )
            served.append((await asyncio.wait_for(started, timeout=10)).instanceId)

        monkeypatch.setattr(queries, "between_steps", serve_one_call_between_chunks)
        HubStub(channel, "doomed").DeleteTaskHub(pb.DeleteTaskHubRequest())
        assert len(served) == 1 and other.GetInstance(pb.GetInstanceRequest(instanceId=served[0])).exists
        assert len(chunks) > 5 and max(chunks) <= 10 and chunks[-1] == 0
        with server.backend.transaction() as tx:
            assert tx.query_instances("doomed", InstanceQueryArgs()) == [] and tx.history("doomed", "i0") == []
            assert not tx.hub_exists("doomed")
