"""A worker process for the backend-outage test: ``python outage_worker_app.py ADDRESS LEDGER``.

Each activity records every run in the shared :class:`Ledger` (its attempts), so the test counts how many times
each one ran whatever happened to the emulator meanwhile. Runs until SIGTERM, then stops the worker.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from dtscale_emulator.ops.stop_signal import StopSignal
from durabletask import task, worker
from durabletask.grpc_options import GrpcWorkerResiliencyOptions
from tests.support.reliability import Ledger

RESILIENCY = GrpcWorkerResiliencyOptions(
    hello_timeout_seconds=5,
    silent_disconnect_timeout_seconds=5,
    reconnect_backoff_base_seconds=0.05,
    reconnect_backoff_cap_seconds=0.5,
)


def chain(ctx: task.OrchestrationContext, steps: int) -> Any:
    """``steps`` activities one after another, each with an effect key of its own."""
    for step in range(steps):
        yield ctx.call_activity("effect", input=f"{ctx.instance_id}/{step}")
    return steps


def main() -> None:
    address, ledger = sys.argv[1], Ledger(Path(sys.argv[2]))

    def effect(ctx: task.ActivityContext, key: str) -> str:
        time.sleep(0.05)  # simulated work, so that some activities are running when the emulator goes away
        ledger.apply(key)
        return key

    w = worker.TaskHubGrpcWorker(host_address=address, resiliency_options=RESILIENCY)
    w.add_orchestrator(chain)
    w.add_activity(effect, name="effect")
    stopped = StopSignal((signal.SIGTERM,))
    w.start()
    stopped.wait()
    w.stop(grace_period=5)


if __name__ == "__main__":
    main()
