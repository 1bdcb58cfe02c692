"""Where the emulator's CPU goes by thread, and how often it syncs the log, per orchestration (issue 44).

Runs one client scenario of run_all.py (``throughput`` by default: three-activity chains) against an emulator in
this process, on a SQLite file with the default durability (``full``), with our worker and the client in processes
of their own. Prints, per orchestration (per activity for ``fan_out``): the log syncs of the group commit, and for
each of the emulator's threads its CPU time and its voluntary and involuntary context switches (from
``/proc/self/task``, so Linux only). A voluntary switch is a wait: for a lock, the GIL, a sync, a socket; an
involuntary one is the scheduler taking the core away.

Prints, never asserts. Usage: python bench/emulator_threads.py [--scenario throughput|fan_out] [--count 300]
[--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402

#: Per thread: (name, CPU clock ticks, voluntary switches, involuntary switches).
Snapshot = dict[str, tuple[str, int, int, int]]


def _snapshot() -> Snapshot:
    names = {t.native_id: t.name for t in threading.enumerate()}
    found: Snapshot = {}
    for tid in os.listdir("/proc/self/task"):
        task = Path("/proc/self/task") / tid
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            status = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines() if ":" in line)
            comm = (task / "comm").read_text().strip()
        except OSError:
            continue  # the thread ended meanwhile
        name = names.get(int(tid), comm)
        voluntary = int(status["voluntary_ctxt_switches"])
        involuntary = int(status["nonvoluntary_ctxt_switches"])
        found[tid] = (name, int(fields[11]) + int(fields[12]), voluntary, involuntary)
    return found


def run_round(scenario: str, count: int) -> None:
    from dtscale_emulator.server import EmulatorServer

    tmp = tempfile.TemporaryDirectory()
    port = run_all._free_port()
    server = EmulatorServer(port=port, db_path=f"{tmp.name}/threads.db")
    server.start()
    worker = run_all._spawn(run_all.OURS_PY, ["worker_proc.py", f"localhost:{port}"], for_peer=False)
    try:
        run_all._await_ready(worker, "worker")
        group = server.backend.group_commit
        syncs = group.syncs if group is not None else 0
        before = _snapshot()
        args = ["client_proc.py", f"localhost:{port}", scenario, str(count)]
        result = run_all._json_run(run_all.OURS_PY, args, for_peer=False)
        after = _snapshot()
        synced = (group.syncs - syncs) if group is not None else 0
        syncer = "none" if group is None else "the kernel, for the loop" if group.kernel_syncs else "its thread"
    finally:
        run_all._close(worker)
        server.stop()
        tmp.cleanup()
    unit = "activity" if scenario == "fan_out" else "orchestration"
    rate = f"{result['per_second']:.1f}/s" if "per_second" in result else f"{result['seconds']:.2f} s"
    print(
        f"{scenario} x {count}: {rate}, load {os.getloadavg()[0]:.1f}; log syncs per {unit}: {synced / count:.2f}"
        f" (run by {syncer})"
    )
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    for tid, (name, cpu, voluntary, involuntary) in after.items():
        _, cpu0, voluntary0, involuntary0 = before.get(tid, (name, 0, 0, 0))
        if cpu == cpu0 and voluntary == voluntary0:
            continue  # idle through the run
        print(
            f"  {name:28s} CPU {(cpu - cpu0) * tick_ms / count:6.2f} ms, switches: voluntary "
            f"{(voluntary - voluntary0) / count:6.1f}, involuntary {(involuntary - involuntary0) / count:6.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="throughput", choices=["throughput", "fan_out"])
    parser.add_argument("--count", type=int, default=300, help="orchestrations (fan_out: activities)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for _ in range(args.rounds):
        run_round(args.scenario, args.count)


if __name__ == "__main__":
    main()
