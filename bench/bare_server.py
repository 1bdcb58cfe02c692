"""A bare gRPC server on our generated stubs that does no work at all, to measure what the transport alone costs.

Usage: bare_server.py PORT. It serves two methods on 127.0.0.1:PORT until stdin closes and prints ``ready``
once it accepts calls:
  Hello         returns at once (the unary floor)
  GetWorkItems  streams ``maxConcurrentActivityWorkItems`` empty ``WorkItem`` messages, then ends (the
                streamed-message floor; the request field is borrowed as the count, nothing else reads it)
Every other method answers UNIMPLEMENTED, as the generated base class does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent import futures

import grpc
from google.protobuf import empty_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

# The emulator's own pool size, so a call never waits for a free server thread here either.
SERVER_THREADS = 128


class BareServicer(pb_grpc.TaskHubSidecarServiceServicer):
    def Hello(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        return empty_pb2.Empty()

    def GetWorkItems(self, request: pb.GetWorkItemsRequest, context: grpc.ServicerContext) -> Iterator[pb.WorkItem]:
        for _ in range(request.maxConcurrentActivityWorkItems):
            yield pb.WorkItem()


def main() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=SERVER_THREADS))
    pb_grpc.add_TaskHubSidecarServiceServicer_to_server(BareServicer(), server)
    port = server.add_insecure_port(f"127.0.0.1:{int(sys.argv[1])}")
    server.start()
    print(f"ready {port}", flush=True)
    sys.stdin.read()
    server.stop(grace=None)


if __name__ == "__main__":
    main()
