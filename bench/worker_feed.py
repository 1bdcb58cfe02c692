"""A bench server that feeds a worker pre-built work items as fast as it completes them, and does no work itself.

Usage: worker_feed.py PORT WORKLOAD SIZE [--sessions]. Prints ``ready`` once serving and ``connected`` once a
worker's GetWorkItems stream is open; streams nothing until a line arrives on stdin, then prints one JSON line
(items, seconds, failures) when the last completion came in, and exits when stdin closes.

Each workload is a set of sequences (one per orchestration, or single items): an item is sent once the one
before it in its sequence was completed, so an orchestration's turns arrive in order as a backend would send
them; at most WINDOW items are out at once. Orchestrator turns carry the history a backend would have stored:
with ``--sessions``, turns after the first carry only their new events (our extended-sessions continuation), and
the first says the worker may keep the orchestration; without it, the feed is a backend that never continues one.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc
from google.protobuf import empty_pb2, struct_pb2, timestamp_pb2, wrappers_pb2

from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._protocol_extensions import INCLUDE_PAST_EVENTS

WINDOW = 64
T0 = 1_700_000_000


def _ts(step: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=T0 + step // 1000, nanos=(step % 1000) * 1_000_000)


def _text(value: object) -> wrappers_pb2.StringValue:
    return wrappers_pb2.StringValue(value=json.dumps(value))


def _ev(at: int, event_id: int = -1, **kind: Any) -> pb.HistoryEvent:
    return pb.HistoryEvent(eventId=event_id, timestamp=_ts(at), **kind)


def _turn(
    iid: str, past: list[pb.HistoryEvent], new: list[pb.HistoryEvent], continuation: bool, sessions: bool = False
) -> pb.WorkItem:
    request = pb.OrchestratorRequest(
        instanceId=iid, executionId=wrappers_pb2.StringValue(value="e1"), pastEvents=[] if continuation else past,
        newEvents=new,
    )  # fmt: skip
    if sessions:  # as our emulator does for a worker that keeps sessions: false on continuations, true otherwise
        request.properties[INCLUDE_PAST_EVENTS].CopyFrom(struct_pb2.Value(bool_value=not continuation))
    return pb.WorkItem(orchestratorRequest=request)


def _started(iid: str, name: str, value: object) -> pb.HistoryEvent:
    instance = pb.OrchestrationInstance(instanceId=iid, executionId=wrappers_pb2.StringValue(value="e1"))
    return _ev(
        0, executionStarted=pb.ExecutionStartedEvent(name=name, input=_text(value), orchestrationInstance=instance)
    )


def chain_turns(iid: str, n: int, sessions: bool, first: int | None = None) -> list[pb.WorkItem]:
    """The n + 1 turns of ``chain(n)`` (or the ``first`` few): each completes activity i - 1, schedules activity i."""
    turns, past = [], []
    new = [_ev(0, orchestratorStarted=pb.OrchestratorStartedEvent()), _started(iid, "chain", n)]
    for i in range(n + 1):
        turns.append(_turn(iid, list(past), new, sessions and i > 0, sessions))
        if i == n or len(turns) == first:
            break
        past += [*new, _ev(i * 10 + 1, i + 1, taskScheduled=pb.TaskScheduledEvent(name="step", input=_text(i)))]
        done = pb.TaskCompletedEvent(taskScheduledId=i + 1, result=_text(i + 1))
        new = [_ev(i * 10 + 5, orchestratorStarted=pb.OrchestratorStartedEvent()), _ev(i * 10 + 5, taskCompleted=done)]
    return turns


def fan_out_turns(iid: str, n: int, batches: int) -> list[pb.WorkItem]:
    """``fan_out(n)``: a first turn scheduling n activities, then ``batches`` turns of their completions."""
    new = [_ev(0, orchestratorStarted=pb.OrchestratorStartedEvent()), _started(iid, "fan_out", n)]
    turns = [_turn(iid, [], new, False)]
    past = new + [_ev(1, i + 1, taskScheduled=pb.TaskScheduledEvent(name="step", input=_text(i))) for i in range(n)]
    per = n // batches
    for b in range(batches):
        new = [_ev(10 + b, orchestratorStarted=pb.OrchestratorStartedEvent())] + [
            _ev(10 + b, taskCompleted=pb.TaskCompletedEvent(taskScheduledId=i + 1, result=_text(i + 1)))
            for i in range(b * per, (b + 1) * per)
        ]
        turns.append(_turn(iid, list(past), new, False))
        past += new
    return turns


def activity(iid: str, name: str) -> pb.WorkItem:
    request = pb.ActivityRequest(
        name=name, taskId=1, input=_text(1), orchestrationInstance=pb.OrchestrationInstance(instanceId=iid)
    )
    return pb.WorkItem(activityRequest=request)


def entity_batch(key: int, operations: int) -> pb.WorkItem:
    ops = [pb.OperationRequest(operation="add", requestId=f"r{key}-{i}", input=_text(1)) for i in range(operations)]
    batch = pb.EntityBatchRequest(instanceId=f"@counter@k{key}", entityState=_text(key), operations=ops)
    return pb.WorkItem(entityRequest=batch)


def workload(name: str, size: int, sessions: bool) -> list[list[pb.WorkItem]]:
    """Sequences of work items; ``size`` counts orchestrations, activities or entity batches."""
    if name == "chain3":
        return [chain_turns(f"c{i}", 3, sessions) for i in range(size)]
    if name == "chain100":
        return [chain_turns(f"l{i}", 100, sessions) for i in range(size)]
    if name == "held":  # two turns each: afterwards every orchestration is held by a worker with sessions
        return [chain_turns(f"h{i}", 100, sessions, first=2) for i in range(size)]
    if name == "fan_out":
        return [fan_out_turns(f"f{i}", 1000, 10) for i in range(size)]
    if name == "activity":  # the activities of a chain: a small input, a small result
        return [[activity(f"a{i}", "step")] for i in range(size)]
    if name == "activity10k":
        return [[activity(f"a{i}", "big")] for i in range(size)]
    if name == "entity50":
        return [[entity_batch(i, 50)] for i in range(size)]
    raise SystemExit(f"unknown workload {name!r}")


def _failed(kind: str, response: Any) -> bool:
    """Whether a completion reports a failure: the pre-built history did not fit the worker's code."""
    if kind == "orchestration":
        for action in response.actions:
            done = action.completeOrchestration if action.HasField("completeOrchestration") else None
            if done is not None and done.orchestrationStatus != pb.ORCHESTRATION_STATUS_COMPLETED:
                return True
        return False
    if kind == "activity":
        return response.HasField("failureDetails")
    return any(r.HasField("failure") for r in response.results)


class Feed(pb_grpc.TaskHubSidecarServiceServicer):
    def __init__(self, sequences: list[list[pb.WorkItem]]) -> None:
        self._sequences = sequences
        self._ready: queue.Queue[tuple[int, int]] = queue.Queue()
        for s in range(len(sequences)):
            self._ready.put((s, 0))
        self._slots = threading.Semaphore(WINDOW)
        self._out: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()
        self.total = sum(len(s) for s in sequences)
        self.completed = self.failures = 0
        self.connected, self.go, self.finished = threading.Event(), threading.Event(), threading.Event()
        self.began = self.ended = 0.0
        self._tokens = 0

    def Hello(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        return empty_pb2.Empty()

    def GetWorkItems(self, request: pb.GetWorkItemsRequest, context: grpc.ServicerContext) -> Iterator[pb.WorkItem]:
        self.connected.set()
        self.go.wait()
        while context.is_active():
            try:
                s, i = self._ready.get(timeout=0.5)
            except queue.Empty:
                if self.finished.is_set():
                    break
                continue
            self._slots.acquire()
            with self._lock:
                self._tokens += 1
                token = f"t{self._tokens}"
                self._out[token] = (s, i)
            item = pb.WorkItem()
            item.CopyFrom(self._sequences[s][i])
            item.completionToken = token
            yield item
        self.finished.wait()

    def _complete(self, token: str, kind: str, response: Any) -> None:
        with self._lock:
            s, i = self._out.pop(token)
            self.completed += 1
            failed = _failed(kind, response)
            if failed and not self.failures:
                print(f"first failed completion: {response}", file=sys.stderr, flush=True)
            self.failures += failed
            done = self.completed == self.total
        if i + 1 < len(self._sequences[s]):
            self._ready.put((s, i + 1))
        self._slots.release()
        if done:
            self.ended = time.perf_counter()
            self.finished.set()

    def CompleteOrchestratorTask(self, request: pb.OrchestratorResponse, context: Any) -> pb.CompleteTaskResponse:
        self._complete(request.completionToken, "orchestration", request)
        return pb.CompleteTaskResponse()

    def CompleteActivityTask(self, request: pb.ActivityResponse, context: Any) -> pb.CompleteTaskResponse:
        self._complete(request.completionToken, "activity", request)
        return pb.CompleteTaskResponse()

    def CompleteEntityTask(self, request: pb.EntityBatchResult, context: Any) -> pb.CompleteTaskResponse:
        self._complete(request.completionToken, "entity", request)
        return pb.CompleteTaskResponse()


def main() -> None:
    port, name, size = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    feed = Feed(workload(name, size, "--sessions" in sys.argv))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    pb_grpc.add_TaskHubSidecarServiceServicer_to_server(feed, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print("ready", flush=True)
    feed.connected.wait()
    print("connected", flush=True)
    sys.stdin.readline()
    feed.began = time.perf_counter()
    feed.go.set()
    feed.finished.wait()
    print(json.dumps({"items": feed.total, "seconds": feed.ended - feed.began, "failures": feed.failures}), flush=True)
    sys.stdin.read()
    server.stop(grace=None)


if __name__ == "__main__":
    main()
