"""Heartbeats of concurrent attempts under injected interleavings: sends delayed, failed before they are recorded,
and failed after they are recorded (the ambiguous case). None is lost beyond coalescing, none is counted twice.

A real gRPC server stands for the backend; its RaiseEvent injects the faults from a seeded random source.
"""

from __future__ import annotations

import json
import random
import threading
import time
from concurrent import futures
from typing import Any

import grpc
import pytest

from durabletask._codec import Codec
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._proto import orchestrator_service_pb2_grpc as pb_grpc
from durabletask._replay.activity_control import CONTROL_TAG, AttemptSettings
from durabletask._replay.controlled_activity import parse_control_event
from durabletask._worker.heartbeats import AttemptHeartbeats, HeartbeatPump
from durabletask._worker.stream import ChannelProvider

ATTEMPTS = 6
PAGES = 300


class FaultyBackend(pb_grpc.TaskHubSidecarServiceServicer):  # type: ignore[misc]
    """Records raised events in arrival order; delays, refuses or 'loses the answer to' some of them."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.recorded: list[str] = []
        self.faults = {"delayed": 0, "refused": 0, "answer_lost": 0}

    def RaiseEvent(self, request: pb.RaiseEventRequest, context: grpc.ServicerContext) -> pb.RaiseEventResponse:
        with self._lock:
            roll = self._random.random()
            pause = self._random.uniform(0.0, 0.01)
        if roll < 0.15:
            self.faults["refused"] += 1
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected: refused before recording")
        time.sleep(pause)
        self.faults["delayed"] += 1
        with self._lock:
            self.recorded.append(request.input.value)
        if roll < 0.30:
            self.faults["answer_lost"] += 1
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "injected: recorded, answer lost")
        return pb.RaiseEventResponse()

    def GetEntity(self, request: pb.GetEntityRequest, context: grpc.ServicerContext) -> pb.GetEntityResponse:
        return pb.GetEntityResponse(exists=False)

    def GetInstance(self, request: pb.GetInstanceRequest, context: grpc.ServicerContext) -> pb.GetInstanceResponse:
        state = pb.OrchestrationState(instanceId=request.instanceId,
                                      orchestrationStatus=pb.ORCHESTRATION_STATUS_RUNNING)
        return pb.GetInstanceResponse(exists=True, orchestrationState=state)

    def QueryEntities(self, request: pb.QueryEntitiesRequest, context: grpc.ServicerContext) -> Any:
        return pb.QueryEntitiesResponse()

    def ListInstanceIds(self, request: pb.ListInstanceIdsRequest, context: grpc.ServicerContext) -> Any:
        return pb.ListInstanceIdsResponse()


def _attempt(task_id: int) -> AttemptHeartbeats:
    request = pb.ActivityRequest(name="extract", taskId=task_id,
                                 orchestrationInstance=pb.OrchestrationInstance(instanceId="inst"))
    settings = AttemptSettings(attempt=1, entity_key="inst", throttle_seconds=0.005, poll_seconds=1.0,
                               reports_start=False, details=None)
    request.tags[CONTROL_TAG] = settings.to_tag()
    return AttemptHeartbeats(request, Codec())


def _beat_until_delivered(pump: HeartbeatPump, attempt: AttemptHeartbeats, backend: FaultyBackend) -> None:
    pump.begin(attempt)
    rng = random.Random(attempt.task_id)
    for page in range(PAGES):
        attempt.beat(page)
        if rng.random() < 0.3:
            time.sleep(rng.uniform(0.0, 0.004))  # interleave with the pump's takes and sends
    last = json.dumps(PAGES - 1)
    deadline = time.monotonic() + 60
    while not any(_report(raw)[:2] == (attempt.task_id, last) for raw in list(backend.recorded)):
        assert time.monotonic() < deadline, f"attempt {attempt.task_id}: its last heartbeat never arrived"
        time.sleep(0.01)
    pump.end(attempt)


def _report(raw: str) -> tuple[int, str | None, str | None, int | None]:
    report = parse_control_event(raw)
    assert report is not None and report.kind == "beat"
    return report.seq, report.details, report.run, report.number


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_heartbeat_is_lost_beyond_coalescing_nor_counted_twice(seed: int) -> None:
    backend = FaultyBackend(seed)
    server = grpc.server(futures.ThreadPoolExecutor(8))
    pb_grpc.add_TaskHubSidecarServiceServicer_to_server(backend, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    pump = HeartbeatPump(ChannelProvider(channel, lambda: channel), _quiet(), tick=0.002, senders=3)
    attempts = [_attempt(task_id) for task_id in range(1, ATTEMPTS + 1)]
    try:
        threads = [threading.Thread(target=_beat_until_delivered, args=(pump, a, backend)) for a in attempts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        pump.close()
        channel.close()
        server.stop(None)
    assert backend.faults["refused"] and backend.faults["answer_lost"]  # the faults did happen
    for attempt in attempts:
        reports = [r for r in map(_report, backend.recorded) if r[0] == attempt.task_id]
        counted: dict[int, str | None] = {}
        for _, details, run, number in reports:
            assert run == attempt.run and number is not None
            if number in counted:
                # A resend of a send whose answer was lost: the same heartbeat, which the orchestration (keyed by
                # run and number) counts once.
                assert counted[number] == details
            counted[number] = details
        numbers = [r[3] for r in reports]
        assert numbers == sorted(numbers)  # one send at a time per attempt, in order
        pages = [json.loads(counted[n] or "null") for n in sorted(counted)]
        assert pages == sorted(set(pages))  # each counted heartbeat newer than the last: coalesced, never reordered
        assert pages[-1] == PAGES - 1  # the last details reached the backend despite the faults
        assert attempt.sends <= len(counted)  # acknowledged sends: never more than the heartbeats counted


def _quiet() -> Any:
    import logging

    logger = logging.getLogger("test-heartbeat-interleavings")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger
