"""Bearer-token authentication on every RPC (health probe included), TLS with a custom CA, loopback binding."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2

from dtscale_emulator.__main__ import build_parser
from dtscale_emulator.ops.healthcheck import probe
from dtscale_emulator.server import EmulatorServer
from durabletask import client, task, worker
from durabletask._grpc.channel import create_channel
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from tests.support.certs import TlsFiles, make_tls
from tests.support.reliability import env, free_port, kill, start_emulator

TOKEN = "s3cret-token"
AUTH = [("authorization", f"Bearer {TOKEN}")]


def double(ctx: task.ActivityContext, value: int) -> int:
    return value * 2


def twice(ctx: task.OrchestrationContext, value: int) -> Any:
    first = yield ctx.call_activity(double, input=value)
    return (yield ctx.call_activity(double, input=first))


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def secured(tls: TlsFiles) -> Iterator[EmulatorServer]:
    server = EmulatorServer(port=0, in_memory=True, auth_token=TOKEN, tls_cert=str(tls.cert), tls_key=str(tls.key))
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def guarded() -> Iterator[EmulatorServer]:
    server = EmulatorServer(port=0, in_memory=True, auth_token=TOKEN, health_ping_interval=0.2)
    server.start()
    yield server
    server.close()


def _code(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        result = call()
        if isinstance(result, Iterator):
            next(result)
    return info.value.code(), info.value.details() or ""


CALLS: list[tuple[str, Any]] = [
    ("Hello", empty_pb2.Empty()),
    ("StartInstance", pb.CreateInstanceRequest(instanceId="x", name="n")),
    ("GetInstance", pb.GetInstanceRequest(instanceId="x")),
    ("RaiseEvent", pb.RaiseEventRequest(instanceId="x", name="e")),
    ("TerminateInstance", pb.TerminateRequest(instanceId="x")),
    ("PurgeInstances", pb.PurgeInstancesRequest(instanceId="x")),
    ("CompleteActivityTask", pb.ActivityResponse(completionToken="t")),
    ("CompleteOrchestratorTask", pb.OrchestratorResponse(completionToken="t")),
    ("DeleteTaskHub", pb.DeleteTaskHubRequest()),
    ("SignalEntity", pb.SignalEntityRequest(instanceId="@e@k", name="op")),
    ("GetWorkItems", pb.GetWorkItemsRequest()),
    ("StreamInstanceHistory", pb.StreamInstanceHistoryRequest(instanceId="x")),
]


@pytest.mark.parametrize(("rpc", "request_message"), CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ([], "missing 'authorization: Bearer <token>' metadata"),
        ([("authorization", "Bearer wrong")], "invalid auth token"),
        ([("authorization", TOKEN)], "missing 'authorization: Bearer <token>' metadata"),
        ([("authorization", f"Basic {TOKEN}")], "missing 'authorization: Bearer <token>' metadata"),
    ],
    ids=["none", "wrong", "no-scheme", "basic"],
)
def test_every_rpc_requires_the_token(
    guarded: EmulatorServer, rpc: str, request_message: Any, metadata: list[tuple[str, str]], message: str
) -> None:
    with grpc.insecure_channel(guarded.address) as channel:
        method = getattr(pb_grpc.TaskHubSidecarServiceStub(channel), rpc)
        code, details = _code(lambda: method(request_message, metadata=metadata, timeout=5))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert message in details


def test_refused_calls_change_nothing(guarded: EmulatorServer) -> None:
    with grpc.insecure_channel(guarded.address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        _code(lambda: stub.StartInstance(pb.CreateInstanceRequest(instanceId="sneaky", name="n"), timeout=5))
        found = stub.GetInstance(pb.GetInstanceRequest(instanceId="sneaky"), metadata=AUTH, timeout=5)
    assert not found.exists


def test_sdk_with_the_token_runs_orchestrations(guarded: EmulatorServer) -> None:
    w = worker.TaskHubGrpcWorker(host_address=guarded.address, metadata=AUTH)
    w.add_orchestrator(twice)
    w.add_activity(double)
    w.start()
    c = client.TaskHubGrpcClient(host_address=guarded.address, metadata=AUTH)
    try:
        iid = c.schedule_new_orchestration(twice, input=5)
        state = c.wait_for_orchestration_completion(iid, timeout=30)
    finally:
        c.close()
        w.stop()
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert state.serialized_output == "20"


def test_sdk_without_the_token_sees_unauthenticated(guarded: EmulatorServer) -> None:
    c = client.TaskHubGrpcClient(host_address=guarded.address)
    try:
        with pytest.raises(Exception) as info:
            c.schedule_new_orchestration(twice, input=1)
    finally:
        c.close()
    text = f"{type(info.value).__name__}: {info.value}"
    assert "UNAUTHENTICATED" in text.upper() or "auth token" in text, text


def test_health_probe_follows_the_token_rule(guarded: EmulatorServer) -> None:
    assert not probe(guarded.address)
    assert not probe(guarded.address, auth_token="wrong")
    assert probe(guarded.address, auth_token=TOKEN)


def test_healthcheck_and_emulator_cli_with_a_token_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    port = free_port()
    proc = start_emulator(tmp_path / "emu.db", port, "--auth-token-file", str(token_file))
    try:
        check = [sys.executable, "-m", "dtscale_emulator.ops.healthcheck", f"127.0.0.1:{port}"]
        assert subprocess.run(check, env=env(), timeout=30).returncode == 1
        assert subprocess.run([*check, "--auth-token", TOKEN], env=env(), timeout=30).returncode == 0
        assert subprocess.run([*check, "--auth-token-file", str(token_file)], env=env(), timeout=30).returncode == 0
        with_env = {**env(), "DTS_EMULATOR_AUTH_TOKEN": TOKEN}
        assert subprocess.run(check, env=with_env, timeout=30).returncode == 0
    finally:
        kill(proc, 15)


def test_emulator_reads_the_token_from_the_environment(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtscale_emulator", "--in-memory", "--port", str(port), "--log-level", "WARNING"],
        env={**env(), "DTS_EMULATOR_AUTH_TOKEN": TOKEN},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and "listening on" in proc.stdout.readline()
        assert not probe(f"127.0.0.1:{port}")
        assert probe(f"127.0.0.1:{port}", auth_token=TOKEN)
    finally:
        kill(proc, 15)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth-token", " "], "--auth-token must not be empty"),
        (["--tls-cert", "x.pem"], "--tls-cert and --tls-key must be given together"),
        (["--tls-cert", "missing.pem", "--tls-key", "missing.key"], "--tls-cert: cannot read 'missing.pem'"),
        (["--auth-token", "a", "--auth-token-file", "f"], "not allowed with argument"),
        (["--faults", "bogus=1"], "unknown fault setting"),
    ],
)
def test_cli_rejects_bad_security_flags(tmp_path: Path, args: list[str], message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dtscale_emulator", "--in-memory", "--port", "0", *args],
        env=env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert message in result.stderr


def test_empty_token_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    result = subprocess.run(
        [sys.executable, "-m", "dtscale_emulator", "--in-memory", "--auth-token-file", str(empty)],
        env=env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "is empty" in result.stderr


# TLS ----------------------------------------------------------------------------------------------
def _tls_channel(server: EmulatorServer, ca: bytes | None) -> grpc.Channel:
    return create_channel(f"localhost:{server.port}", secure_channel=True, root_certificates=ca, metadata=AUTH)


def test_sdk_over_tls_with_a_custom_ca(secured: EmulatorServer, tls: TlsFiles) -> None:
    w = worker.TaskHubGrpcWorker(channel=_tls_channel(secured, tls.ca_pem))
    w.add_orchestrator(twice)
    w.add_activity(double)
    w.start()
    c = client.TaskHubGrpcClient(channel=_tls_channel(secured, tls.ca_pem))
    try:
        iid = c.schedule_new_orchestration(twice, input=3)
        state = c.wait_for_orchestration_completion(iid, timeout=30)
    finally:
        c.close()
        w.stop()
    assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED
    assert state.serialized_output == "12"


def test_tls_refuses_plaintext_and_untrusted_certificates(secured: EmulatorServer, tmp_path: Path) -> None:
    with grpc.insecure_channel(f"localhost:{secured.port}") as plain:
        code, _ = _code(lambda: pb_grpc.TaskHubSidecarServiceStub(plain).Hello(empty_pb2.Empty(), timeout=3))
    assert code == grpc.StatusCode.UNAVAILABLE
    other_ca = make_tls(tmp_path / "other", ca_name="someone-else").ca_pem
    with _tls_channel(secured, other_ca) as untrusted:
        code, _ = _code(lambda: pb_grpc.TaskHubSidecarServiceStub(untrusted).Hello(empty_pb2.Empty(), timeout=3))
    assert code == grpc.StatusCode.UNAVAILABLE


def test_tls_still_requires_the_token(secured: EmulatorServer, tls: TlsFiles) -> None:
    channel = create_channel(f"localhost:{secured.port}", secure_channel=True, root_certificates=tls.ca_pem)
    with channel:
        code, _ = _code(lambda: pb_grpc.TaskHubSidecarServiceStub(channel).Hello(empty_pb2.Empty(), timeout=5))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert probe(f"localhost:{secured.port}", auth_token=TOKEN, tls_ca=tls.ca_pem)
    assert not probe(f"localhost:{secured.port}", auth_token=TOKEN)  # plaintext probe against TLS


def test_cli_serves_tls(tmp_path: Path, tls: TlsFiles) -> None:
    port = free_port()
    proc = start_emulator(tmp_path / "emu.db", port, "--tls-cert", str(tls.cert), "--tls-key", str(tls.key))
    try:
        check = [sys.executable, "-m", "dtscale_emulator.ops.healthcheck", f"localhost:{port}"]
        assert subprocess.run([*check, "--tls-ca", str(tls.ca)], env=env(), timeout=30).returncode == 0
        assert subprocess.run(check, env=env(), timeout=30).returncode == 1
    finally:
        kill(proc, 15)


def test_server_requires_both_tls_files(tls: TlsFiles) -> None:
    with pytest.raises(ValueError, match="tls_cert and tls_key must be given together"):
        EmulatorServer(port=0, in_memory=True, tls_cert=str(tls.cert))


# Binding ------------------------------------------------------------------------------------------
def _outside_address() -> str | None:
    """This machine's address on its default route, if it has one besides loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent for UDP connect
        except OSError:
            return None
        address = str(s.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_binds_loopback_by_default() -> None:
    assert build_parser().parse_args([]).host == "127.0.0.1"
    server = EmulatorServer(port=0, in_memory=True)
    server.start()
    try:
        assert server.address == f"127.0.0.1:{server.port}"
        outside = _outside_address()
        if outside is not None:
            with socket.socket() as s:
                s.settimeout(2)
                assert s.connect_ex((outside, server.port)) != 0, "reachable from a non-loopback address"
    finally:
        server.close()


def test_fault_flag_is_parsed_by_the_cli() -> None:
    parsed = build_parser().parse_args(["--faults", "cut_stream_every=2s,reject_completion_every=4"])
    assert json.loads(json.dumps(parsed.faults.cut_stream_every)) == 2.0
    assert parsed.faults.reject_completion_every == 4


def test_public_clients_trust_a_custom_ca_through_grpc_roots_file(secured: EmulatorServer, tls: TlsFiles) -> None:
    """Without ``channel=``, the public API reaches a TLS emulator when gRPC is pointed at the CA file."""
    script = (
        "import sys\n"
        "from durabletask import client\n"
        "c = client.TaskHubGrpcClient(host_address=sys.argv[1], secure_channel=True,"
        " metadata=[('authorization', 'Bearer ' + sys.argv[2])])\n"
        "print(c.get_orchestration_state('nobody') is None)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, f"localhost:{secured.port}", TOKEN],
        env={**env(), "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(tls.ca)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "True", result.stderr[-2000:]


def test_public_clients_and_worker_take_root_certificates(secured: EmulatorServer, tls: TlsFiles) -> None:
    """``root_certificates=`` on the worker and both clients reaches a TLS emulator signed by a private CA."""
    address = f"https://localhost:{secured.port}"
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=AUTH, root_certificates=tls.ca_pem)
    w.add_orchestrator(twice)
    w.add_activity(double)
    w.start()
    c = client.TaskHubGrpcClient(host_address=address, metadata=AUTH, root_certificates=tls.ca_pem)
    try:
        iid = c.schedule_new_orchestration(twice, input=5)
        state = c.wait_for_orchestration_completion(iid, timeout=30)

        async def read() -> object:
            async with client.AsyncTaskHubGrpcClient(
                host_address=address, metadata=AUTH, root_certificates=tls.ca_pem
            ) as ac:
                return await ac.get_orchestration_state(iid)

        async_state = asyncio.run(read())
    finally:
        c.close()
        w.stop()
    assert state is not None and state.serialized_output == "20"
    assert getattr(async_state, "serialized_output", None) == "20"
    # Without the CA the same address is refused.
    untrusted = client.TaskHubGrpcClient(host_address=address, metadata=AUTH)
    try:
        with pytest.raises(client.RpcStatusError):
            untrusted.get_orchestration_state(iid)
    finally:
        untrusted.close()


def _dockerfile_healthcheck() -> list[str]:
    text = (Path(__file__).parents[3] / "Dockerfile").read_text()
    command = text.split("HEALTHCHECK", 1)[1].split("CMD", 1)[1].split("\n\n", 1)[0]
    return json.loads(command.strip())  # type: ignore[no-any-return]


def test_the_docker_healthcheck_follows_tls_and_token_from_the_environment(
    secured: EmulatorServer, tls: TlsFiles, tmp_path: Path
) -> None:
    # The image's health check command, as Docker runs it inside the container, against a TLS + token emulator
    # configured through the environment variables the image documents.
    command = [sys.executable if part == "python" else part for part in _dockerfile_healthcheck()]
    command = [f"127.0.0.1:{secured.port}" if part == "127.0.0.1:8080" else part for part in command]
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    container = {
        **env(),
        "DTS_EMULATOR_TLS_CERT": str(tls.cert),
        "DTS_EMULATOR_TLS_KEY": str(tls.key),
        "DTS_EMULATOR_TLS_CA": str(tls.ca),
        "DTS_EMULATOR_AUTH_TOKEN_FILE": str(token_file),
    }
    assert subprocess.run(command, env=container, timeout=30).returncode == 0
    assert subprocess.run(command, env={**container, "DTS_EMULATOR_AUTH_TOKEN_FILE": ""}, timeout=30).returncode == 1
    plaintext = {k: v for k, v in container.items() if not k.startswith("DTS_EMULATOR_TLS")}
    assert subprocess.run(command, env=plaintext, timeout=30).returncode == 1


def test_the_emulator_reads_tls_and_the_token_file_from_the_environment(tls: TlsFiles, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    variables = {
        "DTS_EMULATOR_TLS_CERT": str(tls.cert),
        "DTS_EMULATOR_TLS_KEY": str(tls.key),
        "DTS_EMULATOR_AUTH_TOKEN_FILE": str(token_file),
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in variables.items():
            patch.setenv(key, value)
        args = build_parser().parse_args([])
    assert (args.tls_cert, args.tls_key, args.auth_token_file) == (str(tls.cert), str(tls.key), str(token_file))
