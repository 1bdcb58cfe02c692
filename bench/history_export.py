"""History export of N finished instances: time and peak RSS of the exporting process (prints, never asserts).

The store is generated straight into SQLite (bench/store_scale.py: 3-activity chains, 12 events each, about
98 % of them terminal) and served by an emulator process. Then, each on the same data:
  ours cli    `durabletask export --to DIR` (the command runs the export itself, 8 instances at a time)
  ours job    our SDK's export job: a worker with the extension and its client, in one process
  theirs job  Microsoft's export job, the same script in the peer interpreter
Peak RSS is the exporting process's own maximum resident set since it started (VmHWM). The CLI also runs on a
tenth of the instances: a peak that does not grow with the count is the bounded memory.

Usage: .venv/bin/python bench/history_export.py [--instances 10000] [--skip ours-job,theirs-job]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402
import store_scale  # noqa: E402


def _range() -> tuple[str, str]:
    # The generated instances completed within the last 31 days.
    now = datetime.now(timezone.utc)
    return (now - timedelta(days=40)).isoformat(), (now + timedelta(minutes=5)).isoformat()


def _files(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.jsonl.gz"))


# ru_maxrss of a child is no use here: Linux carries the parent's peak over a fork and exec. The command line
# runs under this wrapper instead, which prints its own VmHWM (peak RSS since exec) when it exits.
_CLI_WITH_PEAK = """
import atexit, runpy, sys
def peak():
    with open("/proc/self/status") as status:
        kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"peak_rss_kb {kb}\\n")
atexit.register(peak)
sys.argv[0] = "durabletask"
runpy.run_module("durabletask.cli", run_name="__main__")
"""


def cli_export(address: str, folder: Path) -> dict[str, Any]:
    since, until = _range()
    argv = [sys.executable, "-c", _CLI_WITH_PEAK, "--endpoint", address, "--taskhub", store_scale.HUB, "--json",
            "export", "--since", since, "--until", until, "--to", str(folder)]  # fmt: skip
    began = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=run_all._env(False), capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise RuntimeError(f"export failed: {proc.stderr or proc.stdout}")
    result = json.loads(proc.stdout)
    peak = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("peak_rss_kb "))
    return {"seconds": seconds, "exported": result["exported"], "failed": len(result["failed"]),
            "peak_rss_kb": peak, "files": _files(folder)}  # fmt: skip


def job_export(python: str, address: str, folder: Path, *, for_peer: bool) -> dict[str, Any]:
    since, until = _range()
    argv = [python, str(HERE / "export_job_proc.py"), address, store_scale.HUB, str(folder), since, until]
    # cwd=HERE: the peer must import its own durabletask, never ours.
    proc = subprocess.run(argv, cwd=HERE, env=run_all._env(for_peer), capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    result["files"] = _files(folder)
    return result


def _row(name: str, r: dict[str, Any]) -> str:
    return (
        f"  {name:11s} {r['seconds']:7.1f} s  {r['exported'] / r['seconds']:5.0f} instances/s  peak RSS "
        f"{r['peak_rss_kb'] / 1024:6.1f} MiB  exported {r['exported']} (files {r['files']}, failed {r['failed']})"
    )


def _measure(count: int, skip: set[str], work: Path) -> list[str]:
    db = str(work / f"store-{count}.db")
    made = store_scale.generate(db, count)
    terminal = count - round(count * 0.02)
    lines = [f"{count:,} instances generated in {made['seconds']:.1f} s (about {terminal:,} terminal)"]
    runs: list[tuple[str, Any]] = [("ours cli", cli_export)]
    if "ours-job" not in skip:
        runs.append(("ours job", lambda a, d: job_export(run_all.OURS_PY, a, d, for_peer=False)))
    if "theirs-job" not in skip and Path(run_all.PEER_PY).exists():
        runs.append(("theirs job", lambda a, d: job_export(run_all.PEER_PY, a, d, for_peer=True)))
    for name, run in runs:
        # Each on its own copy of the store: a job's own orchestration, once finished, is a terminal instance
        # the next export would also pick up.
        label = name.replace(" ", "-")
        copy, folder = work / f"{label}-{count}.db", work / f"{label}-{count}"
        shutil.copyfile(db, copy)
        with store_scale.emulator(str(copy)) as (address, _, _):
            try:
                lines.append(_row(name, run(address, folder)))
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                lines.append(f"  {name:11s} did not finish: {str(exc).strip().splitlines()[-1][:200]}")
        shutil.rmtree(folder, ignore_errors=True)
        copy.unlink()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--skip", default="", help="comma-separated: ours-job, theirs-job")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    with tempfile.TemporaryDirectory(prefix="dts-export-bench-") as tmp:
        work = Path(tmp)
        small = max(args.instances // 10, 1)
        lines = _measure(small, skip | {"ours-job", "theirs-job"}, work)
        lines += _measure(args.instances, skip, work)
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
