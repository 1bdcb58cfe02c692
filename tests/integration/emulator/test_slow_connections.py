"""Slow and silent clients against the emulator's gRPC server, over real sockets: each is cut off, others served.

Half an HTTP/2 preface is closed at the handshake timeout; a connection that finished its handshake but opens no
call (nothing more, or half a frame) is closed at the idle timeout. The attacks wait for the close under the
ceiling of ``tests/support/slow_clients.py``, many times the short limits the server is given here.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import grpc
import pytest

from dtscale_emulator.__main__ import main as emulator_main
from dtscale_emulator.server import EmulatorServer
from tests.support.slow_clients import CEILING, attacker, closed_by_server, connect

from .conftest import HubStub, start

pytestmark = [pytest.mark.timeout(300), pytest.mark.adversarial]

LIMIT = 0.5  # seconds: the handshake and idle timeouts of the server under attack
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# A frame's header: 24-bit length, type, flags, stream 0. SETTINGS (type 4), empty; then the ACK of the server's,
# so the connection is established in full and only the idle timeout can close it.
HANDSHAKE = PREFACE + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"


@pytest.fixture
def server() -> Iterator[EmulatorServer]:
    served = EmulatorServer(port=0, in_memory=True, handshake_timeout=LIMIT, idle_timeout=LIMIT)
    served.start()
    try:
        yield served
    finally:
        served.stop()


def _served(server: EmulatorServer) -> None:
    """A client's call is answered (on a channel of its own)."""
    with grpc.insecure_channel(server.address) as channel:
        assert start(HubStub(channel, "default"))


async def test_half_a_preface_is_closed_and_others_are_served(server: EmulatorServer) -> None:
    async with attacker(f"http://{server.address}") as (reader, writer):
        writer.write(PREFACE[:10])
        await writer.drain()
        await asyncio.to_thread(_served, server)
        await closed_by_server(reader)


async def test_half_a_frame_after_the_handshake_is_closed(server: EmulatorServer) -> None:
    async with attacker(f"http://{server.address}") as (reader, writer):
        writer.write(HANDSHAKE + b"\x00\x00\x10\x01")  # a HEADERS frame's header, cut short
        await writer.drain()
        await asyncio.to_thread(_served, server)
        await closed_by_server(reader)


async def test_many_idle_connections_are_closed(server: EmulatorServer) -> None:
    attackers = [await connect(f"http://{server.address}") for _ in range(50)]
    try:
        for _, writer in attackers[::2]:
            writer.write(HANDSHAKE)
            await writer.drain()
        await asyncio.to_thread(_served, server)
        for reader, _ in attackers:
            await closed_by_server(reader)
    finally:
        for _, writer in attackers:
            writer.close()


def test_a_client_whose_idle_connection_was_closed_calls_again(server: EmulatorServer) -> None:
    with grpc.insecure_channel(server.address) as channel:
        stub = HubStub(channel, "default")
        assert start(stub)
        dropped = threading.Event()

        def watch(state: grpc.ChannelConnectivity) -> None:
            if state is not grpc.ChannelConnectivity.READY:  # the server closed the connection that was idle
                dropped.set()

        channel.subscribe(watch)
        try:
            assert dropped.wait(CEILING), "the server never closed the idle connection"
        finally:
            channel.unsubscribe(watch)
        assert start(stub)  # on a new connection of the same channel


@pytest.mark.parametrize("flag", ["--handshake-timeout", "--idle-timeout"])
@pytest.mark.parametrize("value", ["0", "-1", "90000"])
def test_the_command_refuses_a_timeout_out_of_range(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        emulator_main([flag, value, "--in-memory", "--port", "0"])
    assert stopped.value.code == 2
    assert f"{flag} must be between 0.001 and 86400 seconds" in capsys.readouterr().err


def test_the_server_refuses_a_timeout_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"idle_timeout must be between 0\.001 and 86400 seconds"):
        EmulatorServer(port=0, in_memory=True, idle_timeout=0)
