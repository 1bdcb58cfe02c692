"""The transport floor: empty unary calls per second against a backend, sequential and with calls in flight."""

from __future__ import annotations

import json
import sys
import time

import grpc
from google.protobuf import empty_pb2

from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc


def measure(address: str, calls: int, in_flight: int) -> float:
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.TaskHubSidecarServiceStub(channel)
        stub.Hello(empty_pb2.Empty(), timeout=10)
        start = time.perf_counter()
        if in_flight <= 1:
            for _ in range(calls):
                stub.Hello(empty_pb2.Empty(), timeout=10)
        else:
            pending = []
            for _ in range(calls):
                pending.append(stub.Hello.future(empty_pb2.Empty(), timeout=30))
                if len(pending) >= in_flight:
                    pending.pop(0).result()
            for fut in pending:
                fut.result()
        return calls / (time.perf_counter() - start)


def main() -> None:
    address, calls, in_flight = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps({"calls_per_second": measure(address, calls, in_flight), "in_flight": in_flight}))


if __name__ == "__main__":
    main()
