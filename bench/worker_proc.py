"""Runs one worker with the benchmark workloads registered until stdin closes; prints ``ready``."""

from __future__ import annotations

import sys

from polling_opt_in import opt_in

# Before anything imports grpc: our SDK measured with its opt-in client polling (a no-op under Microsoft's).
opt_in()

# isort: split
from workloads import ACTIVITIES, ORCHESTRATORS  # noqa: E402

from durabletask import worker  # noqa: E402


def main() -> None:
    address = sys.argv[1]
    w = worker.TaskHubGrpcWorker(host_address=address)
    for fn in ORCHESTRATORS:
        w.add_orchestrator(fn)
    for fn in ACTIVITIES:
        w.add_activity(fn)
    w.start()
    print("ready", flush=True)
    sys.stdin.read()
    w.stop()


if __name__ == "__main__":
    main()
