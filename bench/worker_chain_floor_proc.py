"""The least a Python worker can do to run bench/workloads.py's 3-activity chain end to end: no SDK at all.

Usage: worker_chain_floor_proc.py ADDRESS [--turns-here | --inline]; prints ``ready``, runs until stdin closes.
It reads work items as our worker does (one stream, read on its own thread with gRPC's ``SingleThreadedUnaryStream``
option) and answers them with hand-built protobuf: an orchestrator turn counts the completed tasks in its history
and schedules the next ``step`` or completes with the last result; an activity returns its input plus one. By
default it places the work as our worker (and Microsoft's) does: every item is handed to a pool thread (so that a
long item does not stop the stream being read) and completed there with a blocking call. So its CPU per
orchestration is the transport's and the hand-over's share of any such worker's: what bench/worker_e2e.py's ratio
can at most reach. ``--turns-here`` answers each turn on the reading thread and sends its completion as a future
that thread does not wait for (activities still go to the pool): the design of running turns on the stream's
thread. ``--inline`` answers every item on the reading thread with blocking calls: no hand-over at all, at the
price of one round trip of waiting per item.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc
from google.protobuf import wrappers_pb2
from worker_floor_proc import serve_until_stdin_closes

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


# Completions sent as futures: gRPC cancels a call whose future is collected, so each is kept until it is over.
_PENDING: set[grpc.Future[Any]] = set()


def orchestrate(
    stub: pb_grpc.TaskHubSidecarServiceStub, request: pb.OrchestratorRequest, token: str, *, wait: bool
) -> None:
    done, value = _turn([*request.pastEvents, *request.newEvents])
    text = wrappers_pb2.StringValue(value=value)
    if done < STEPS:
        action = pb.OrchestratorAction(id=done, scheduleTask=pb.ScheduleTaskAction(name="step", input=text))
    else:
        action = pb.OrchestratorAction(
            id=done, completeOrchestration=pb.CompleteOrchestrationAction(orchestrationStatus=COMPLETED, result=text)
        )
    response = pb.OrchestratorResponse(instanceId=request.instanceId, completionToken=token, actions=[action])
    if wait:
        stub.CompleteOrchestratorTask(response)
        return
    future = stub.CompleteOrchestratorTask.future(response)
    _PENDING.add(future)
    future.add_done_callback(_PENDING.discard)


def activity(stub: pb_grpc.TaskHubSidecarServiceStub, request: pb.ActivityRequest, token: str) -> None:
    result = wrappers_pb2.StringValue(value=json.dumps(json.loads(request.input.value) + 1))
    stub.CompleteActivityTask(
        pb.ActivityResponse(
            instanceId=request.orchestrationInstance.instanceId, taskId=request.taskId, result=result,
            completionToken=token,
        )
    )  # fmt: skip


def answer(stub: pb_grpc.TaskHubSidecarServiceStub, item: pb.WorkItem, *, wait: bool = True) -> None:
    if item.HasField("orchestratorRequest"):
        orchestrate(stub, item.orchestratorRequest, item.completionToken, wait=wait)
    elif item.HasField("activityRequest"):
        activity(stub, item.activityRequest, item.completionToken)


def main() -> None:
    if "--inline" in sys.argv:
        serve_until_stdin_closes(sys.argv[1], answer, handoff=False, single_threaded=True)
    elif "--turns-here" in sys.argv:
        serve_until_stdin_closes(
            sys.argv[1],
            lambda stub, item: answer(stub, item, wait=False),
            handoff=lambda item: not item.HasField("orchestratorRequest"),
            single_threaded=True,
        )
    else:
        serve_until_stdin_closes(sys.argv[1], answer, handoff=True, single_threaded=True)


if __name__ == "__main__":
    main()
