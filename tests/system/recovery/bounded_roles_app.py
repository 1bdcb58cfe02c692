"""A worker process with one role: ``python bounded_roles_app.py ADDRESS LEDGER orchestrations|activities``.

``orchestrations`` runs the bounded-activity orchestrations (and the control entity); ``activities`` runs their
activities, one at a time. Both ask only for their own work (work-item filters), so a test can kill the activity
worker alone while the orchestrations carry on elsewhere.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from dtscale_emulator.ops.stop_signal import StopSignal
from durabletask import worker
from tests.support.reliability import Ledger
from tests.system.recovery import bounded_app
from tests.system.recovery.worker_app import RESILIENCY


def build(address: str, ledger: Ledger, role: str) -> worker.TaskHubGrpcWorker:
    if role == "orchestrations":
        w = worker.TaskHubGrpcWorker(host_address=address, resiliency_options=RESILIENCY)
        for orch in bounded_app.ORCHESTRATORS:
            w.add_orchestrator(orch)
    elif role == "activities":
        # One activity at a time: a stream the backend still believes in (its process gone) holds no more.
        options = worker.ConcurrencyOptions(maximum_concurrent_activity_work_items=1)
        w = worker.TaskHubGrpcWorker(host_address=address, resiliency_options=RESILIENCY, concurrency_options=options)
        for fn in bounded_app.activities(ledger):
            w.add_activity(fn, name=fn.__name__)
    else:
        raise SystemExit(f"unknown role {role!r}")
    w.use_work_item_filters()
    return w


def main() -> None:
    address, ledger_path, role = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    w = build(address, Ledger(ledger_path), role)
    stopped = StopSignal((signal.SIGTERM,))
    w.start()
    print("worker started", flush=True)
    stopped.wait()
    w.stop()


if __name__ == "__main__":
    main()
