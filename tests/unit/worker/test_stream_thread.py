"""The work-item stream is read on the worker's own stream thread, not received on grpc's channel thread."""

from __future__ import annotations

import json
import time
from typing import Any

from conftest import WorkerFactory
from worker_fakes import WAIT, Server, activity_item


def double(ctx: object, value: int) -> int:
    return value * 2


def _stream_call(worker: Any) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        call = worker._run.loop._call
        if call is not None:
            return call
        time.sleep(0.01)
    raise AssertionError("the stream did not open")


def test_the_stream_is_read_on_the_stream_thread(server: Server, make_worker: WorkerFactory) -> None:
    # grpc's default stream call receives each message on the channel's own thread and hands it over to the
    # thread iterating it: a thread switch per work item. The worker's own channel reads the stream on the
    # stream thread itself (grpc's single-threaded stream call).
    worker = make_worker()
    worker.add_activity(double)
    worker.start()
    stream = server.sidecar.next_stream()
    stream.send(activity_item("double", "21", task_id=7, token="t-1"))
    rpc, response = server.sidecar.next_completion()
    assert rpc == "CompleteActivityTask" and json.loads(response.result.value) == 42
    assert type(_stream_call(worker)).__name__ == "_SingleThreadedRendezvous"
