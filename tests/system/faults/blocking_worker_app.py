"""A worker whose one activity never returns: ``python blocking_worker_app.py ADDRESS STARTED GRACE [sync|async]``.

It starts, waits until the activity has started (it creates the file STARTED), calls ``stop(grace_period=GRACE)``,
prints ``stopped`` and returns from its main function. Whether the process then exits is what the test watches.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from durabletask import task, worker


def waits_on_the_block(ctx: task.OrchestrationContext, _: Any) -> Any:
    return (yield ctx.call_activity("never_returns", input=ctx.instance_id))


def main() -> None:
    address, started, grace = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
    kind = sys.argv[4] if len(sys.argv) > 4 else "sync"

    def never_returns(ctx: task.ActivityContext, instance_id: str) -> None:
        started.write_text(f"{instance_id} {ctx.task_id}")
        threading.Event().wait()  # the activity that never returns: nothing ever sets this event

    async def never_returns_async(ctx: task.ActivityContext, instance_id: str) -> None:
        started.write_text(f"{instance_id} {ctx.task_id}")
        await asyncio.Event().wait()  # nothing ever sets this event either

    w = worker.TaskHubGrpcWorker(host_address=address)
    w.add_orchestrator(waits_on_the_block)
    w.add_activity(never_returns if kind == "sync" else never_returns_async, name="never_returns")
    w.start()
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # another thread of this process writes the file
    w.stop(grace_period=grace)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
