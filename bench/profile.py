"""Profiles one side of the throughput workload (the emulator or our worker) with yappi, across all its threads.

The other side and the client run as separate processes, as in run_all.py. yappi is not a project dependency:
``pip install yappi`` first.

Usage: python bench/profile.py emulator|worker [--count 300] [--memory] [--top 40]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("side", choices=["emulator", "worker"])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--memory", action="store_true", help="in-memory emulator instead of SQLite on disk")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--scenario", default="throughput")
    args = parser.parse_args()

    import yappi

    port = run_all._free_port()
    address = f"localhost:{port}"
    tmp = tempfile.TemporaryDirectory()
    other: subprocess.Popen[str]
    yappi.set_clock_type("cpu")
    if args.side == "emulator":
        from dtscale_emulator.server import EmulatorServer

        yappi.start()
        server = EmulatorServer(port=port, db_path=None if args.memory else f"{tmp.name}/p.db", in_memory=args.memory)
        server.start()
        other = run_all._spawn(run_all.OURS_PY, ["worker_proc.py", address], for_peer=False)
        run_all._await_ready(other, "worker")
        stop = server.stop
    else:
        kind = "ours-memory" if args.memory else "ours-sqlite"
        other = run_all._spawn(
            run_all.OURS_PY, ["backend_proc.py", kind, "--port", str(port), "--db", f"{tmp.name}/p.db"], for_peer=False
        )
        run_all._await_ready(other, "emulator")
        from workloads import ACTIVITIES, ORCHESTRATORS

        from durabletask import worker

        yappi.start()
        w = worker.TaskHubGrpcWorker(host_address=address)
        for fn in ORCHESTRATORS:
            w.add_orchestrator(fn)
        for fn in ACTIVITIES:
            w.add_activity(fn)
        w.start()
        stop = w.stop
    try:
        result = run_all._json_run(
            run_all.OURS_PY, ["client_proc.py", address, args.scenario, str(args.count)], for_peer=False
        )
    finally:
        yappi.stop()
        run_all._close(other)
        stop()
        tmp.cleanup()
    print(result)
    stats = yappi.get_func_stats()
    stats.sort("tsub")
    stats.print_all(
        columns={0: ("name", 90), 1: ("ncall", 9), 2: ("tsub", 8), 3: ("ttot", 8), 4: ("tavg", 8)}, limit=args.top
    )
    stats.sort("ttot")
    stats.print_all(
        columns={0: ("name", 90), 1: ("ncall", 9), 2: ("tsub", 8), 3: ("ttot", 8), 4: ("tavg", 8)}, limit=args.top
    )


if __name__ == "__main__":
    main()
