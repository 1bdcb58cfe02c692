"""A worker process serving the webhook tests' project: ``python support_webhooks_worker.py ADDRESS TASKHUB``.

Runs until it is killed; prints ``ready`` once it listens for work.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.langgraph_server.support_runs import RunsHub
from tests.langgraph_server.support_webhooks import project, worker_for


def main() -> None:
    w = worker_for(RunsHub(sys.argv[1], sys.argv[2]), project())
    w.start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
