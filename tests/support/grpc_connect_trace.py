"""Which of grpc's clients made a connection, read from grpc's own ``tcp`` trace in a child interpreter.

grpc's thread-polled client connects in ``tcp_client_posix.cc``; its event-engine client (grpcio 1.85's default) does
not. The polling tests and the import side-effect tests both tell the two apart this way.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

#: A child program's code that connects a channel to ``{port}`` (format it) and closes it.
CONNECT = """
import grpc
channel = grpc.insecure_channel("127.0.0.1:{port}")
try:
    grpc.channel_ready_future(channel).result(timeout=1)
except grpc.FutureTimeoutError:
    pass
channel.close()
"""
#: The environment that makes grpc trace its connections on stderr.
TRACE = {"GRPC_TRACE": "tcp", "GRPC_VERBOSITY": "debug"}
#: The source file grpc's thread-polled client connects in, as its trace names it.
THREAD_POLLED = "tcp_client_posix.cc"


@pytest.fixture
def listener() -> Iterator[int]:
    """A plain TCP listener: enough for a channel to connect, which is all grpc's connection trace needs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]
