"""The least a Python gRPC worker can do per work item: read it from the stream and complete it, with no SDK.

Usage: worker_floor_proc.py ADDRESS [--handoff] [--single-threaded]; prints ``ready``, runs until stdin closes.
Each item is answered on the stream's own thread with the smallest completion that reports success (the
orchestration completes, the activity returns ``1``, or for ``big`` the same 10 KB text the real one returns,
since every worker sends it; every entity operation succeeds), so its CPU per item is the transport's share of any
worker's: what bench/worker_cpu.py's ratios can at most reach.

With ``--handoff`` each item is answered on a thread of a pool instead (as an SDK worker must, so that one long
work item does not stop the stream being read while the leases of the items behind it run out): the difference
is what that one hand-over between threads costs per item. With ``--single-threaded`` the channel reads its
unary-stream calls on the reading thread (gRPC's experimental ``SingleThreadedUnaryStream`` option) instead of
through gRPC's own polling thread.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from durabletask.grpc_options import enable_thread_polling

if __name__ == "__main__":
    # First, before grpc is imported: the floor of an SDK program that opts in to the SDK's client polling.
    # (bench/worker_chain_floor_proc.py imports this file after grpc, and so measures grpc's default, as before.)
    enable_thread_polling()

# isort: split
import grpc
import grpc.experimental
from google.protobuf import empty_pb2, wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

DONE = pb.OrchestratorAction(
    id=1, completeOrchestration=pb.CompleteOrchestrationAction(orchestrationStatus=pb.ORCHESTRATION_STATUS_COMPLETED)
)
ONE = wrappers_pb2.StringValue(value="1")
BIG = wrappers_pb2.StringValue(value=json.dumps("x" * 10_240))  # what worker_cpu_proc.py's ``big`` returns


def answer(stub: pb_grpc.TaskHubSidecarServiceStub, item: pb.WorkItem) -> None:
    token = item.completionToken
    if item.HasField("orchestratorRequest"):
        iid = item.orchestratorRequest.instanceId
        stub.CompleteOrchestratorTask(pb.OrchestratorResponse(instanceId=iid, completionToken=token, actions=[DONE]))
    elif item.HasField("activityRequest"):
        request = item.activityRequest
        stub.CompleteActivityTask(
            pb.ActivityResponse(
                instanceId=request.orchestrationInstance.instanceId, taskId=request.taskId,
                result=BIG if request.name == "big" else ONE,
                completionToken=token,
            )
        )  # fmt: skip
    elif item.HasField("entityRequest"):
        ops = len(item.entityRequest.operations)
        ok = pb.OperationResult(success=pb.OperationResultSuccess())
        stub.CompleteEntityTask(pb.EntityBatchResult(results=[ok] * ops, completionToken=token))


Answer = Callable[[pb_grpc.TaskHubSidecarServiceStub, pb.WorkItem], None]
# Whether a work item is answered on a pool thread (True) or on the reading thread.
HandOff = Callable[[pb.WorkItem], bool]


def serve_until_stdin_closes(address: str, answer: Answer, *, handoff: bool | HandOff, single_threaded: bool) -> None:
    """Reads work items and answers each (on a pool thread where ``handoff`` says so); prints ``ready``, ends at EOF."""
    hand_off: HandOff = handoff if callable(handoff) else (lambda item: handoff)
    pool = ThreadPoolExecutor(max_workers=6)  # CPUs + 4, as a worker's pool; threads start only when used
    options = [(grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)] if single_threaded else []
    channel = grpc.insecure_channel(address, options=options)
    stub = pb_grpc.TaskHubSidecarServiceStub(channel)
    stub.Hello(empty_pb2.Empty(), timeout=30)
    call = stub.GetWorkItems(pb.GetWorkItemsRequest())

    def serve() -> None:
        try:
            for item in call:
                if hand_off(item):
                    pool.submit(answer, stub, item)
                else:
                    answer(stub, item)
        except grpc.RpcError:
            pass  # cancelled at the end

    threading.Thread(target=serve, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
    call.cancel()
    channel.close()


def main() -> None:
    serve_until_stdin_closes(
        sys.argv[1], answer, handoff="--handoff" in sys.argv, single_threaded="--single-threaded" in sys.argv
    )


if __name__ == "__main__":
    main()
