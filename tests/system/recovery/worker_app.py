"""A worker process hosting the recovery workflows: ``python worker_app.py ADDRESS LEDGER [VERSION]``.

Every activity records its external effect in the shared :class:`Ledger` under a stable effect key, so
the tests can tell a step that ran twice from one that ran once, whatever happened to the processes.
"""

from __future__ import annotations

import os
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
from durabletask.worker import VersionFailureStrategy, VersioningOptions, VersionMatchStrategy
from tests.support import endpoint
from tests.support.endpoint import BACKEND_ENV
from tests.support.reliability import Ledger
from tests.system.recovery import bounded_app

RESILIENCY = GrpcWorkerResiliencyOptions(
    hello_timeout_seconds=5,
    silent_disconnect_timeout_seconds=5,
    reconnect_backoff_base_seconds=0.05,
    reconnect_backoff_cap_seconds=0.5,
    channel_recreate_failure_threshold=2,
)


# Orchestrations ------------------------------------------------------------------------------------
def steps(ctx: task.OrchestrationContext, count: int) -> Any:
    """``count`` slow steps in sequence, each a keyed effect."""
    done = []
    for i in range(count):
        done.append((yield ctx.call_activity("slow_step", input=f"{ctx.instance_id}/step/{i}")))
    return done


def pipeline(ctx: task.OrchestrationContext, count: int) -> Any:
    """``count`` quick steps in sequence (the many-instances workload)."""
    for i in range(count):
        yield ctx.call_activity("step", input=f"{ctx.instance_id}/{i}")
    return count


def approval(ctx: task.OrchestrationContext, _: Any) -> Any:
    """Prepare, wait for one approval, then apply; a second approval is never acted on."""
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/prepare")
    decision = yield ctx.wait_for_external_event("approval")
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/apply")
    return {"approved_by": decision}


def uncertain_write(ctx: task.OrchestrationContext, mode: str) -> Any:
    """Writes once; when the write's outcome is unknown, asks the ledger by effect key instead of writing again."""
    key = f"{ctx.instance_id}/write"
    try:
        yield ctx.call_activity("write", input={"key": key, "mode": mode})
        return "written"
    except task.TaskFailedError:
        if (yield ctx.call_activity("lookup", input=key)):
            return "reconciled"
        yield ctx.call_activity("write", input={"key": key, "mode": "ok"})
        return "rewritten"


def extraction(ctx: task.OrchestrationContext, _: Any) -> Any:
    """A long extraction that a ``cancel`` event can abandon; cancelling runs the compensation."""
    extract = ctx.call_activity("extract", input=ctx.instance_id)
    cancel = ctx.wait_for_external_event("cancel")
    winner = yield task.when_any([extract, cancel])
    if winner is cancel:
        yield ctx.call_activity("step", input=f"{ctx.instance_id}/compensate")
        return "cancelled"
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/load")
    return "loaded"


def order_v1(ctx: task.OrchestrationContext, _: Any) -> Any:
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/v1/reserve")
    yield ctx.wait_for_external_event("go")
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/v1/ship")
    return "v1"


def order_v2(ctx: task.OrchestrationContext, _: Any) -> Any:
    # A different sequence of steps: replaying a v1 history on this code would be non-deterministic.
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/v2/check")
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/v2/reserve")
    yield ctx.wait_for_external_event("go")
    yield ctx.call_activity("step", input=f"{ctx.instance_id}/v2/ship")
    return "v2"


# Activities ----------------------------------------------------------------------------------------
class Activities:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def step(self, ctx: task.ActivityContext, key: str) -> str:
        self.ledger.apply(key)
        return key

    def slow_step(self, ctx: task.ActivityContext, key: str) -> str:
        time.sleep(0.3)  # simulated work, long enough for a test to kill the process between steps
        self.ledger.apply(key)
        return key

    def write(self, ctx: task.ActivityContext, request: dict[str, str]) -> str:
        mode = request["mode"]
        if mode == "lost_before":
            raise TimeoutError("the storage service did not answer in time (nothing was written)")
        self.ledger.apply(request["key"], "written")
        if mode == "lost_after":
            raise TimeoutError("the storage service did not answer in time (the write may have happened)")
        return request["key"]

    def lookup(self, ctx: task.ActivityContext, key: str) -> bool:
        return self.ledger.has(key)

    def extract(self, ctx: task.ActivityContext, instance_id: str) -> str:
        self.ledger.apply(f"{instance_id}/extract-started")
        release = self.ledger.path.with_name(f"release-{instance_id}")
        deadline = time.monotonic() + 60
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the test releases the extraction by creating a file
        self.ledger.apply(f"{instance_id}/extracted")
        return "rows"


def scheduler_or_plain_worker(address: str) -> worker.TaskHubGrpcWorker:
    """The plain worker on our emulator; the DurableTaskScheduler one when the tests target an external backend."""
    if not os.environ.get(BACKEND_ENV):
        return worker.TaskHubGrpcWorker(host_address=address, resiliency_options=RESILIENCY)
    from durabletask.azuremanaged.worker import DurableTaskSchedulerWorker

    return DurableTaskSchedulerWorker(
        host_address=address,
        taskhub=os.environ["DTS_TEST_TASKHUB"],
        token_credential=endpoint.credential(),
        resiliency_options=RESILIENCY,
    )


def build(address: str, ledger: Ledger, version: str | None) -> worker.TaskHubGrpcWorker:
    w = scheduler_or_plain_worker(address)
    acts = Activities(ledger)
    for fn in (acts.step, acts.slow_step, acts.write, acts.lookup, acts.extract, *bounded_app.activities(ledger)):
        w.add_activity(fn, name=fn.__name__)
    for orch in (steps, pipeline, approval, uncertain_write, extraction, *bounded_app.ORCHESTRATORS):
        w.add_orchestrator(orch)
    if version is not None:
        w.add_orchestrator(order_v1 if version == "1" else order_v2, name="order")
        w.use_versioning(
            VersioningOptions(
                version=version,
                default_version=version,
                match_strategy=VersionMatchStrategy.STRICT,
                failure_strategy=VersionFailureStrategy.REJECT,
            )
        )
        w.use_work_item_filters()
    return w


def main() -> None:
    address, ledger_path = sys.argv[1], Path(sys.argv[2])
    version = sys.argv[3] if len(sys.argv) > 3 else None
    w = build(address, Ledger(ledger_path), version)
    stopped = StopSignal((signal.SIGTERM,))
    w.start()
    print("worker started", flush=True)
    stopped.wait()
    w.stop()


if __name__ == "__main__":
    main()
