"""A worker with every workflow of the scenarios, under whichever SDK is importable (ours, or Microsoft's in the peer).

Run as a script (``python workers.py ADDRESS``) it serves until stdin closes; its first stdout line says it is ready.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from durabletask import worker
from durabletask.grpc_options import GrpcWorkerResiliencyOptions

if __package__:
    from . import workflows
else:  # the peer imports this folder's modules as top-level ones, never through the repository root
    import workflows  # type: ignore[no-redef,import-not-found]

#: Reconnect at once after a dropped stream, and notice a silent one quickly.
RESILIENCY = GrpcWorkerResiliencyOptions(
    hello_timeout_seconds=5,
    silent_disconnect_timeout_seconds=2,
    reconnect_backoff_base_seconds=0.02,
    reconnect_backoff_cap_seconds=0.2,
)


def start_worker(address: str) -> Any:
    w = worker.TaskHubGrpcWorker(host_address=address, resiliency_options=RESILIENCY)
    for orchestrator in workflows.ORCHESTRATORS:
        w.add_orchestrator(orchestrator)
    for activity in workflows.ACTIVITIES:
        w.add_activity(activity)
    for entity in workflows.ENTITIES:
        w.add_entity(entity)
    w.start()
    return w


def main(address: str) -> None:
    w = start_worker(address)
    try:
        print(json.dumps({"ready": os.getpid()}), flush=True)
        sys.stdin.read()
    finally:
        w.stop()


if __name__ == "__main__":
    main(sys.argv[1])
