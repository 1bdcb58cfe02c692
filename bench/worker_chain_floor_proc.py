"""The least a Python worker can do to run bench/workloads.py's 3-activity chain end to end: no SDK at all.

Usage: worker_chain_floor_proc.py ADDRESS [--inline]; prints ``ready``, runs until stdin closes. It reads work
items as our worker does (one stream, read on its own thread with gRPC's ``SingleThreadedUnaryStream`` option)
and hands each to a pool thread (as any SDK worker must, so that a long item does not stop the stream being
read), where it is answered with hand-built protobuf: an orchestrator turn counts the completed tasks in its
history and schedules the next ``step`` or completes with the last result; an activity returns its input plus
one. So its CPU per orchestration is the transport's and the hand-over's share of any worker's: what
bench/worker_e2e.py's ratio can at most reach. With ``--inline`` every item is answered on the reading thread
instead, with no hand-over: what running orchestrator turns on the stream's thread could at most save.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc
import grpc.experimental
from google.protobuf import empty_pb2, wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc

STEPS = 3
COMPLETED = pb.ORCHESTRATION_STATUS_COMPLETED


def _turn(events: Iterable[pb.HistoryEvent]) -> tuple[int, str]:
    """How many steps completed, and the latest value (the input, or the last step's result)."""
    done, value = 0, "null"
    for event in events:
        which = event.WhichOneof("eventType")
        if which == "executionStarted":
            value = event.executionStarted.input.value
        elif which == "taskCompleted":
            done, value = done + 1, event.taskCompleted.result.value
    return done, value


def orchestrate(stub: pb_grpc.TaskHubSidecarServiceStub, request: pb.OrchestratorRequest, token: str) -> None:
    done, value = _turn([*request.pastEvents, *request.newEvents])
    text = wrappers_pb2.StringValue(value=value)
    if done < STEPS:
        action = pb.OrchestratorAction(id=done, scheduleTask=pb.ScheduleTaskAction(name="step", input=text))
    else:
        action = pb.OrchestratorAction(
            id=done, completeOrchestration=pb.CompleteOrchestrationAction(orchestrationStatus=COMPLETED, result=text)
        )
    stub.CompleteOrchestratorTask(
        pb.OrchestratorResponse(instanceId=request.instanceId, completionToken=token, actions=[action])
    )


def activity(stub: pb_grpc.TaskHubSidecarServiceStub, request: pb.ActivityRequest, token: str) -> None:
    result = wrappers_pb2.StringValue(value=json.dumps(json.loads(request.input.value) + 1))
    stub.CompleteActivityTask(
        pb.ActivityResponse(
            instanceId=request.orchestrationInstance.instanceId, taskId=request.taskId, result=result,
            completionToken=token,
        )
    )  # fmt: skip


def answer(stub: pb_grpc.TaskHubSidecarServiceStub, item: pb.WorkItem) -> None:
    if item.HasField("orchestratorRequest"):
        orchestrate(stub, item.orchestratorRequest, item.completionToken)
    elif item.HasField("activityRequest"):
        activity(stub, item.activityRequest, item.completionToken)


def main() -> None:
    pool = None if "--inline" in sys.argv else ThreadPoolExecutor(max_workers=6)  # CPUs + 4, as a worker's pool
    options = [(grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)]
    channel = grpc.insecure_channel(sys.argv[1], options=options)
    stub = pb_grpc.TaskHubSidecarServiceStub(channel)
    stub.Hello(empty_pb2.Empty(), timeout=30)
    call = stub.GetWorkItems(pb.GetWorkItemsRequest())

    def serve() -> None:
        try:
            for item in call:
                if pool is None:
                    answer(stub, item)
                else:
                    pool.submit(answer, stub, item)
        except grpc.RpcError:
            pass  # cancelled at the end

    threading.Thread(target=serve, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
    call.cancel()
    channel.close()


if __name__ == "__main__":
    main()
