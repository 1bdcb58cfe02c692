"""Container health probe: exits 0 when the emulator answers a gRPC Hello (``python -m emulator.healthcheck``)."""

from __future__ import annotations

import sys

import grpc
from google.protobuf import empty_pb2

from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc


def probe(address: str = "127.0.0.1:8080", timeout: float = 3.0) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            pb_grpc.TaskHubSidecarServiceStub(channel).Hello(empty_pb2.Empty(), timeout=timeout)
        except grpc.RpcError:
            return False
    return True


def main() -> int:
    return 0 if probe(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8080") else 1


if __name__ == "__main__":
    sys.exit(main())
