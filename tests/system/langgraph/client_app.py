"""A client process that resumes a waiting graph thread: ``python client_app.py ADDRESS LEDGER GRAPH THREAD RESUME``.

RESUME is JSON: the value handed to ``Command(resume=...)``. Prints what ``invoke`` returned, normalised, as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from langgraph.types import Command

from durabletask import client
from durabletask.extensions.langgraph import DurableGraph
from tests.support.langgraph_trace import norm
from tests.support.reliability import Ledger
from tests.system.langgraph.graphs import build_all


def main() -> None:
    address, ledger_path, graph, thread_id, resume = sys.argv[1:6]
    c = client.TaskHubGrpcClient(host_address=address)
    try:
        app = DurableGraph(c, graph, build_all(Ledger(Path(ledger_path)))[graph])
        out = app.invoke(Command(resume=json.loads(resume)), {"configurable": {"thread_id": thread_id}})
    finally:
        c.close()
    print(json.dumps(norm(out)), flush=True)


if __name__ == "__main__":
    main()
