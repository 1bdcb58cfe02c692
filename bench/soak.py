"""Soak: many orchestrations through one emulator process and two worker processes while faults keep firing.

    python bench/soak.py [--count 10000] [--faults PROFILE] [--json]

Each orchestration runs two activities that record keyed effects in a shared SQLite ledger. At the end
the script reads every instance's state and the emulator's stored histories and prints completed, lost
(not completed) and duplicated completions (an instance whose history ended more than once), how often
activities re-ran (redelivery after a fault; their effects still apply once), and the resident memory
of the emulator and both workers after warm-up and after the run. It exits 1 if anything was lost or
duplicated or if any process grew by more than ``--max-growth``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_FAULTS = "cut_stream_every=3s,stall_every=8s,stall_for=4s,goaway_every=11s,reject_completion_every=97"
STEPS = 2


# Ledger -------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _ledger(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY)")
        conn.execute("CREATE TABLE IF NOT EXISTS attempts (key TEXT)")
        yield conn
    finally:
        conn.close()


# Worker role ------------------------------------------------------------------------------------------
def run_worker(address: str, ledger: Path, sessions: bool) -> None:
    """The worker process: registers the soak workflow and runs until SIGTERM."""
    from dtscale_emulator.ops.stop_signal import StopSignal
    from durabletask import task, worker
    from durabletask.grpc_options import GrpcWorkerResiliencyOptions

    local = threading.local()

    def connection() -> sqlite3.Connection:
        if not hasattr(local, "conn"):
            local.conn = sqlite3.connect(ledger, timeout=60, isolation_level=None)
        return local.conn  # type: ignore[no-any-return]

    def soak_step(ctx: task.ActivityContext, key: str) -> str:
        conn = connection()
        conn.execute("INSERT INTO attempts VALUES (?)", (key,))
        conn.execute("INSERT OR IGNORE INTO effects VALUES (?)", (key,))
        return key

    def soak_chain(ctx: task.OrchestrationContext, steps: int) -> Any:
        for i in range(steps):
            yield ctx.call_activity(soak_step, input=f"{ctx.instance_id}/{i}")
        return steps

    resiliency = GrpcWorkerResiliencyOptions(
        hello_timeout_seconds=5,
        silent_disconnect_timeout_seconds=2.5,
        reconnect_backoff_base_seconds=0.05,
        reconnect_backoff_cap_seconds=1.0,
    )
    extended = None if sessions else worker.ExtendedSessionOptions(max_cached_orchestrations=0)
    w = worker.TaskHubGrpcWorker(host_address=address, resiliency_options=resiliency, extended_sessions=extended)
    w.add_orchestrator(soak_chain)
    w.add_activity(soak_step)
    stopped = StopSignal((signal.SIGTERM,))
    w.start()
    print("ready", flush=True)
    stopped.wait()
    w.stop()


# Driver -----------------------------------------------------------------------------------------------
def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(args: list[str], ready: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if ready not in line:
        proc.kill()
        raise RuntimeError(f"{args[1:3]} did not start: {line!r}")
    return proc


class Soak:
    """Owns the processes and counters of one soak run."""

    def __init__(self, folder: Path, args: argparse.Namespace) -> None:
        self.args = args
        self.db, self.ledger = folder / "emulator.db", folder / "ledger.db"
        with _ledger(self.ledger):
            pass
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.finished = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self.warm: dict[str, int] = {}
        self.warm_event = threading.Event()

    def start(self) -> None:
        emulator = [sys.executable, "-m", "dtscale_emulator", "--db", str(self.db), "--port", str(self.port)]
        emulator += ["--log-level", "ERROR", "--health-ping-interval", "1", "--lease-timeout", "60"]
        if self.args.faults:
            emulator += ["--faults", self.args.faults]
        self.procs["emulator"] = _spawn(emulator, "listening on")
        for name in ("worker-1", "worker-2"):
            role = [
                sys.executable,
                __file__,
                "--role",
                "worker",
                "--address",
                self.address,
                "--ledger",
                str(self.ledger),
            ]
            if self.args.no_sessions:
                role.append("--no-sessions")
            self.procs[name] = _spawn(role, "ready")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()

    def memory(self) -> dict[str, int]:
        return {name: rss_kib(proc.pid) for name, proc in self.procs.items()}

    def _one(self, c: Any, iid: str) -> None:
        """Schedules one instance and waits for it, riding out calls refused while the server restarts."""
        from durabletask import client

        final = (client.OrchestrationStatus.COMPLETED, client.OrchestrationStatus.FAILED)
        deadline = time.monotonic() + self.args.instance_timeout
        scheduled = False
        while time.monotonic() < deadline:
            try:
                if not scheduled:
                    c.schedule_new_orchestration("soak_chain", input=STEPS, instance_id=iid)
                    scheduled = True
                state = c.wait_for_orchestration_completion(iid, timeout=15)
                if state is not None and state.runtime_status in final:
                    break
            except Exception as error:
                if "already exists" in str(error):
                    scheduled = True  # an earlier attempt got through before its answer was lost
                else:
                    time.sleep(0.1)  # the emulator is restarting; try again shortly
        self._finished_one()

    def _finished_one(self) -> None:
        with self._lock:
            self.finished += 1
            if self.finished >= self.args.warmup and not self.warm_event.is_set():
                self.warm = self.memory()
                self.warm_event.set()

    def drive(self) -> float:
        from durabletask import client

        clients = [client.TaskHubGrpcClient(host_address=self.address) for _ in range(4)]
        started = time.monotonic()
        try:
            with ThreadPoolExecutor(self.args.concurrency) as pool:
                futures = [
                    pool.submit(self._one, clients[i % len(clients)], f"soak-{i:06d}") for i in range(self.args.count)
                ]
                for future in futures:
                    future.result()
        finally:
            for c in clients:
                c.close()
        return time.monotonic() - started


def _outcomes(db: Path, count: int) -> dict[str, int]:
    """Completed, lost and duplicated completions, read from the emulator's own store after it stopped."""
    from durabletask._proto import orchestrator_service_pb2 as pb

    endings: dict[str, int] = {}
    with contextlib.closing(sqlite3.connect(db)) as conn:
        for instance_id, blob in conn.execute(
            "SELECT i.instance_id, h.event FROM history h JOIN instances i USING (ikey)"
        ):
            event = pb.HistoryEvent.FromString(blob)
            if event.HasField("executionCompleted"):
                endings[instance_id] = endings.get(instance_id, 0) + 1
            elif instance_id not in endings:
                endings.setdefault(instance_id, 0)
        statuses = dict(conn.execute("SELECT instance_id, status FROM instances"))
    ids = [f"soak-{i:06d}" for i in range(count)]
    completed = sum(1 for i in ids if statuses.get(i) == pb.ORCHESTRATION_STATUS_COMPLETED)
    return {
        "completed": completed,
        "lost": count - completed,
        "duplicated_completions": sum(1 for i in ids if endings.get(i, 0) > 1),
    }


def _effects(ledger: Path) -> dict[str, int]:
    with _ledger(ledger) as conn:
        effects = conn.execute("SELECT COUNT(*) FROM effects").fetchone()[0]
        attempts = conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    return {"effects": effects, "activity_reruns": attempts - effects}


def run(args: argparse.Namespace) -> dict[str, Any]:
    with TemporaryDirectory(prefix="dts-soak-") as tmp:
        soak = Soak(Path(tmp), args)
        soak.start()
        try:
            seconds = soak.drive()
            soak.warm_event.wait(1)
            after = soak.memory()
        finally:
            soak.stop()
        report: dict[str, Any] = {
            "count": args.count,
            "seconds": round(seconds, 1),
            "faults": args.faults,
            "sessions": not args.no_sessions,
        }
        report.update(_outcomes(soak.db, args.count))
        files = [soak.db, soak.db.with_name(soak.db.name + "-wal")]
        report["emulator_db_mib"] = round(sum(f.stat().st_size for f in files if f.exists()) / 2**20, 1)
        report.update(_effects(soak.ledger))
        report["expected_effects"] = args.count * STEPS
        report["rss_kib_after_warmup"] = soak.warm
        report["rss_kib_after_run"] = after
        report["rss_growth"] = {
            name: round(after[name] / soak.warm[name] - 1, 3) for name in after if soak.warm.get(name)
        }
    return report


def _verdict(report: dict[str, Any], max_growth: float) -> list[str]:
    problems = []
    if report["lost"]:
        problems.append(f"{report['lost']} orchestrations did not complete")
    if report["duplicated_completions"]:
        problems.append(f"{report['duplicated_completions']} orchestrations completed more than once")
    if report["effects"] != report["expected_effects"]:
        problems.append(f"{report['effects']} effects recorded, expected {report['expected_effects']}")
    for name, growth in report["rss_growth"].items():
        if growth > max_growth:
            problems.append(f"{name} memory grew {growth:.0%} after warm-up (limit {max_growth:.0%})")
    return problems


def _print(report: dict[str, Any], problems: list[str]) -> None:
    faults = report["faults"] or "none"
    print(f"orchestrations:          {report['count']} in {report['seconds']} s  (faults: {faults})")
    print(f"extended sessions:       {'on' if report['sessions'] else 'off'}")
    print(f"completed:               {report['completed']}")
    print(f"lost:                    {report['lost']}")
    print(f"duplicated completions:  {report['duplicated_completions']}")
    print(f"effects (expected):      {report['effects']} ({report['expected_effects']})")
    print(f"activity re-runs:        {report['activity_reruns']} (redelivered after faults; effects applied once)")
    for name, after in report["rss_kib_after_run"].items():
        warm = report["rss_kib_after_warmup"].get(name, 0)
        growth = report["rss_growth"].get(name)
        shown = f"{growth:+.1%}" if growth is not None else "n/a"
        print(f"RSS {name:<10}           warm-up {warm / 1024:7.1f} MiB  after {after / 1024:7.1f} MiB  ({shown})")
    # The emulator's SQLite page cache (up to 64 MiB) fills as its database grows, so part of its growth
    # after warm-up is cache, bounded by that limit, rather than leaked memory.
    print(f"emulator database:       {report['emulator_db_mib']} MiB")
    print("result:                  " + ("OK" if not problems else "; ".join(problems)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=10_000, help="orchestrations to run (default 10000)")
    parser.add_argument("--faults", default=DEFAULT_FAULTS, help="emulator --faults profile ('' for none)")
    parser.add_argument("--concurrency", type=int, default=48, help="instances in flight at once")
    parser.add_argument("--warmup", type=int, default=0, help="completions before the warm-up memory sample")
    parser.add_argument("--max-growth", type=float, default=0.20, help="allowed memory growth after warm-up")
    parser.add_argument("--instance-timeout", type=float, default=300.0, help="seconds one instance may take")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line")
    parser.add_argument("--no-sessions", action="store_true", help="workers keep no extended sessions")
    parser.add_argument("--role", choices=["driver", "worker"], default="driver", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--ledger", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.warmup:
        args.warmup = max(1, args.count // 10)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.role == "worker":
        run_worker(args.address, Path(args.ledger), sessions=not args.no_sessions)
        return 0
    report = run(args)
    problems = _verdict(report, args.max_growth)
    report["problems"] = problems
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        _print(report, problems)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
