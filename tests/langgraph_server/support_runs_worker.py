"""A worker process serving the run tests' graphs: ``python support_runs_worker.py ADDRESS TASKHUB``.

Runs until it is killed; prints ``ready`` once it listens for work.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from durabletask import worker
from durabletask.extensions.langgraph import register_graph
from tests.langgraph_server.support_runs_graphs import BUILDERS


def main() -> None:
    address, taskhub = sys.argv[1], sys.argv[2]
    w = worker.TaskHubGrpcWorker(host_address=address, metadata=[("taskhub", taskhub)])
    for name, build in BUILDERS.items():
        register_graph(w, name, build().compile())
    w.start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
