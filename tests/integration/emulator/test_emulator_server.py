"""The server object, persistence across restarts, the health probe and ``durabletask.testing``."""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
from google.protobuf import empty_pb2

from dtscale_emulator.ops.clock import ManualClock
from dtscale_emulator.ops.healthcheck import probe
from dtscale_emulator.server import EmulatorServer
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.testing import InMemoryOrchestrationBackend, create_test_backend

from .conftest import HubStub, WorkStream, complete, later, schedule, start, status_of, timer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_port_zero_picks_a_free_port_and_address_reports_it() -> None:
    with EmulatorServer(port=0, in_memory=True) as server:
        assert server.port > 0 and server.address == f"127.0.0.1:{server.port}"
        assert probe(server.address)


def test_health_probe_fails_when_nothing_listens() -> None:
    assert not probe(f"127.0.0.1:{_free_port()}", timeout=0.5)


def test_timers_and_instances_survive_a_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "emu.db")
    clock = ManualClock()
    with EmulatorServer(port=0, db_path=db, clock=clock) as first, grpc.insecure_channel(first.address) as ch:
        stub = HubStub(ch, "default")
        iid = start(stub, "Sleeper")
        work = WorkStream(stub)
        complete(stub, work.next(), timer(1, later(clock, 60)))
        work.cancel()
    clock.advance(61)
    with EmulatorServer(port=0, db_path=db, clock=clock) as second, grpc.insecure_channel(second.address) as ch:
        stub = HubStub(ch, "default")
        assert status_of(stub, iid) == pb.ORCHESTRATION_STATUS_RUNNING
        item = WorkStream(stub).next()
        assert item.orchestratorRequest.instanceId == iid
        assert item.orchestratorRequest.newEvents[1].timerFired.timerId == 1


def test_work_in_flight_at_shutdown_is_offered_again_after_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "emu.db")
    with EmulatorServer(port=0, db_path=db) as first, grpc.insecure_channel(first.address) as ch:
        stub = HubStub(ch, "default")
        iid = start(stub)
        WorkStream(stub).next()
    with EmulatorServer(port=0, db_path=db) as second, grpc.insecure_channel(second.address) as ch:
        assert WorkStream(HubStub(ch, "default")).next().orchestratorRequest.instanceId == iid


def test_create_test_backend_serves_resets_and_restarts() -> None:
    port = _free_port()
    backend = create_test_backend(port=port)
    try:
        assert isinstance(backend, InMemoryOrchestrationBackend)
        assert backend.address == f"localhost:{port}"
        with grpc.insecure_channel(backend.address) as ch:
            stub = HubStub(ch, "default")
            stub.Hello(empty_pb2.Empty())
            iid = start(stub)
            backend.reset()
            assert not stub.GetInstance(pb.GetInstanceRequest(instanceId=iid)).exists
        backend.stop()
        backend.reset()
        assert backend.start() == f"localhost:{port}"
        with grpc.insecure_channel(backend.address) as ch:
            HubStub(ch, "default").Hello(empty_pb2.Empty())
    finally:
        backend.stop()


def test_history_limit_is_enforced() -> None:
    backend = InMemoryOrchestrationBackend(max_history_size=4, port=0)
    backend.start()
    try:
        with grpc.insecure_channel(backend.address) as ch:
            stub = HubStub(ch, "default")
            start(stub)
            work = WorkStream(stub)
            item = work.next()
            try:
                complete(stub, item, *[schedule(i, "A") for i in range(1, 4)])
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            else:
                raise AssertionError("a completion over the history limit was accepted")
    finally:
        backend.stop()


def test_package_exports_the_server_and_clocks() -> None:
    import dtscale_emulator as emulator

    assert emulator.EmulatorServer is EmulatorServer and emulator.ManualClock is ManualClock
    assert set(emulator.__all__) == {"Clock", "EmulatorServer", "Limits", "ManualClock", "SystemClock"}


def test_testing_backend_is_importable_from_its_1_12_module_path() -> None:
    from durabletask.testing import in_memory_backend

    assert in_memory_backend.create_test_backend is create_test_backend
    assert in_memory_backend.InMemoryOrchestrationBackend is InMemoryOrchestrationBackend
