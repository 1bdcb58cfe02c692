"""A worker process for the backend-outage test of entities: ``python entity_outage_worker_app.py ADDRESS LEDGER``.

Its one entity, ``recorder``, applies each ``record`` operation's key to the shared :class:`Ledger`, which counts
every run, so the test sees an operation that ran twice. Runs until SIGTERM, then stops the worker.
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
from durabletask import worker
from tests.support.reliability import Ledger
from tests.system.faults.outage_worker_app import RESILIENCY


def main() -> None:
    address, ledger = sys.argv[1], Ledger(Path(sys.argv[2]))

    def recorder(ctx: Any, key: str) -> int:
        if ctx.operation != "record":
            raise ValueError(f"unknown operation {ctx.operation}")
        time.sleep(0.02)  # simulated work, so that some batches are running when the emulator goes away
        ledger.apply(key)
        count = int(ctx.get_state(int, 0)) + 1
        ctx.set_state(count)
        return count

    w = worker.TaskHubGrpcWorker(host_address=address, resiliency_options=RESILIENCY)
    w.add_entity(recorder, name="recorder")
    stopped = StopSignal((signal.SIGTERM,))
    w.start()
    stopped.wait()
    w.stop(grace_period=5)


if __name__ == "__main__":
    main()
