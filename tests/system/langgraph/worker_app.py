"""A worker process serving the LangGraph system tests' graphs: ``python worker_app.py ADDRESS LEDGER [ROLE]``.

ROLE ``all`` (default) serves every graph. ``without-gpu`` serves every graph but the ``pinned`` graph's ``gpu``
node, and ``gpu`` serves that node only; both send work-item filters made from what they registered. Runs until
SIGTERM (or SIGKILL).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from dtscale_emulator.ops.stop_signal import StopSignal
from durabletask import worker
from durabletask.extensions.langgraph import register_graph
from durabletask.worker import ConcurrencyOptions
from tests.support.reliability import Ledger
from tests.system.langgraph.graphs import build_all
from tests.system.recovery.worker_app import RESILIENCY

# Few activities at once, so a fan-out leaves work queued for a second worker.
CONCURRENCY = ConcurrencyOptions(maximum_concurrent_activity_work_items=8)


def build(address: str, ledger: Ledger, role: str) -> worker.TaskHubGrpcWorker:
    w = worker.TaskHubGrpcWorker(host_address=address, resiliency_options=RESILIENCY, concurrency_options=CONCURRENCY)
    for name, graph in build_all(ledger).items():
        if role == "all":
            register_graph(w, name, graph)
        elif role == "without-gpu":
            nodes = [n for n in graph.nodes if name != "pinned" or n != "gpu"]
            register_graph(w, name, graph, nodes=nodes)
        elif name == "pinned":
            register_graph(w, name, graph, nodes=["gpu"], orchestrator=False)
    if role != "all":
        # Filters made from what was registered: the backend sends this worker only work it can run.
        w.use_work_item_filters()
    return w


def main() -> None:
    address, ledger_path = sys.argv[1], Path(sys.argv[2])
    role = sys.argv[3] if len(sys.argv) > 3 else "all"
    if role not in ("all", "without-gpu", "gpu"):
        raise SystemExit(f"unknown role {role!r}: all, without-gpu or gpu")
    w = build(address, Ledger(ledger_path), role)
    stopped = StopSignal((signal.SIGTERM,))
    w.start()
    print("worker started", flush=True)
    stopped.wait()
    w.stop()


if __name__ == "__main__":
    main()
