"""A worker process for the stream tests: ``python stream_worker_app.py ADDRESS TASKHUB``; runs until killed."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from durabletask import task, worker

TOKENS = 20


def slow_tokens(ctx: task.ActivityContext, _: Any) -> int:
    for i in range(TOKENS):
        ctx.publish(i, topic="tokens")
        time.sleep(0.05)
    return TOKENS


def slow_agent(ctx: task.OrchestrationContext, _: Any) -> Any:
    ctx.publish("start", topic="status")
    count = yield ctx.call_activity(slow_tokens)
    ctx.publish("done", topic="status")
    return count


if __name__ == "__main__":
    address, taskhub = sys.argv[1], sys.argv[2]
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=[("taskhub", taskhub)])
    w.add_orchestrator(slow_agent)
    w.add_activity(slow_tokens)
    w.start()
    print("ready", flush=True)
    while True:
        time.sleep(1)
