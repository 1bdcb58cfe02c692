"""The SDK worker measured alone: work items per CPU-second of the worker process, ours against Microsoft's.

bench/worker_feed.py (its own process) streams pre-built work items as fast as the worker completes them and
does no work; the worker (bench/worker_cpu_proc.py, in our venv or Microsoft's) is the only process doing real
work. Its CPU comes from /proc over the measured stretch only (from the first work item to the last completion).
Sides run interleaved, round by round, in the same minutes. Prints, never asserts.

Rows:
  chain3        turns of 3-activity chains (4 turns each, full histories)
  fan_out       turns of a 1,000-way fan-out (a scheduling turn, then 10 turns of 100 completions)
  chain100      turns of 100-activity chains: ours with extended sessions (continuations carry new events
                only), ours without, Microsoft's (full histories every turn)
  activity      activities as a chain's are: a small input, a small result
  activity10k   activities returning 10 KB
  entity50      entity batches of 50 operations
  memory        10,000 orchestrations held in our extended sessions: resident memory per held orchestration

Usage: .venv/bin/python bench/worker_cpu.py [--quick] [--rounds 2] [--rows chain3,fan_out,...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402
import targets  # noqa: E402

# row -> (workload, size, size with --quick, sides); a side is (label, SDK, worker arguments, feed arguments)
# "bare loop" is bench/worker_floor_proc.py: no SDK, only the gRPC calls every worker makes per item.
FLOOR = ("bare loop", "floor", [], [])
# The same, each item answered on a pool thread: the least a worker that reads on one thread and runs items on
# others (as both SDKs do) can spend per item.
HANDOFF = ("bare + hand-off", "floor", ["--handoff"], [])
# The bare loop again, its stream read on the reading thread (gRPC's SingleThreadedUnaryStream channel option).
SINGLE = ("bare, stream on one thread", "floor", ["--single-threaded"], [])
SIDES_PLAIN = [("ours", "ours", [], []), ("microsoft", "theirs", [], []), FLOOR, HANDOFF, SINGLE]
SIDES_SESSIONS = [
    ("ours, sessions", "ours", [], ["--sessions"]),
    ("ours, no sessions", "ours", ["--cache", "0"], []),
    ("microsoft", "theirs", [], []),
    FLOOR,
]
ROWS: dict[str, tuple[str, int, int, list[tuple[str, str, list[str], list[str]]]]] = {
    "chain3": ("chain3", 500, 150, SIDES_PLAIN),
    "fan_out": ("fan_out", 6, 2, SIDES_PLAIN),
    "chain100": ("chain100", 20, 6, SIDES_SESSIONS),
    "activity": ("activity", 3000, 800, SIDES_PLAIN),
    "activity10k": ("activity10k", 3000, 800, SIDES_PLAIN),
    "entity50": ("entity50", 1000, 300, SIDES_PLAIN),
}
HELD = 10_000


def _rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def measure(workload: str, size: int, sdk: str, worker_args: list[str], feed_args: list[str]) -> dict[str, Any]:
    """One worker process over one feed: items, wall seconds, worker CPU seconds and RSS before/after."""
    port = run_all._free_port()
    feed = run_all._spawn(run_all.OURS_PY, ["worker_feed.py", str(port), workload, str(size), *feed_args],
                          for_peer=False)  # fmt: skip
    worker = None
    try:
        run_all._await_ready(feed, f"worker_feed.py {workload}")
        python = run_all.PEER_PY if sdk == "theirs" else run_all.OURS_PY
        script = "worker_floor_proc.py" if sdk == "floor" else "worker_cpu_proc.py"
        worker = run_all._spawn(python, [script, f"127.0.0.1:{port}", *worker_args],
                                for_peer=sdk == "theirs")  # fmt: skip
        run_all._await_ready(worker, f"worker {sdk}")
        run_all._await_ready(feed, "the worker's stream", word="connected")
        assert feed.stdin is not None and feed.stdout is not None
        cpu0, rss0 = run_all._cpu_seconds(worker.pid), _rss_bytes(worker.pid)
        feed.stdin.write("go\n")
        feed.stdin.flush()
        result: dict[str, Any] = json.loads(feed.stdout.readline())
        cpu1, rss1 = run_all._cpu_seconds(worker.pid), _rss_bytes(worker.pid)
    finally:
        if worker is not None:
            run_all._close(worker)
        run_all._close(feed)
    result["cpu"] = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    result["rss"] = (rss0, rss1)
    return result


def _line(label: str, runs: list[dict[str, Any]]) -> tuple[str, float]:
    rates = [r["items"] / r["cpu"] for r in runs if r["cpu"]]
    rate = statistics.median(rates) if rates else float("nan")
    failures = sum(r["failures"] for r in runs)
    flag = f"   ({failures} FAILED completions: the history did not fit)" if failures else ""
    text = (
        f"    {label:18s} {rate:9.0f} items/CPU-s   (rounds: {', '.join(f'{x:.0f}' for x in rates)}; "
        f"{runs[0]['items']} items, {statistics.median(r['seconds'] for r in runs):.2f} s wall){flag}"
    )
    return text, rate


def bench_rows(names: list[str], quick: bool, rounds: int, out: list[str]) -> dict[str, dict[str, float]]:
    """Runs each row, appends its lines to ``out``; returns each row's items per CPU-second by side."""
    measured: dict[str, dict[str, float]] = {}
    for name in names:
        workload, size, quick_size, sides = ROWS[name]
        size = quick_size if quick else size
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label, *_ in sides}
        for _ in range(rounds):  # interleaved: every side once per round
            for label, sdk, worker_args, feed_args in sides:
                runs[label].append(measure(workload, size, sdk, worker_args, feed_args))
        out.append(f"  {name}:")
        rates = {}
        for label, results in runs.items():
            text, rates[label] = _line(label, results)
            out.append(text)
        floors = (FLOOR[0], HANDOFF[0], SINGLE[0])
        ratios = [f"{label} / microsoft {rate / rates['microsoft']:.2f}x" for label, rate in rates.items()
                  if label not in ("microsoft", *floors) and rates["microsoft"]]  # fmt: skip
        handoff = (
            f"; with one hand-over to a pool thread per item {rates[HANDOFF[0]] / rates['microsoft']:.2f}x"
            if HANDOFF[0] in rates
            else ""
        )
        if SINGLE[0] in rates:
            handoff += f"; its stream read on one thread {rates[SINGLE[0]] / rates['microsoft']:.2f}x"
        out.append(
            f"    {'; '.join(ratios)} ({targets.at_least(targets.WORKER_CPU)}); "
            f"the bare loop reaches {rates[FLOOR[0]] / rates['microsoft']:.2f}x"
            f" microsoft: the most any Python gRPC worker can reach here{handoff}"
        )
        print("\n".join(out[-len(sides) - 2 :]), flush=True)
        measured[name] = rates
    return measured


def whole_chain(measured: dict[str, dict[str, float]], out: list[str]) -> None:
    """A 3-activity chain is 4 orchestration turns and 3 activities: the CPU of one whole chain from the chain3
    and activity rows of this run, ours against Microsoft's (the issue-44 item-6 figure)."""
    if "chain3" not in measured or "activity" not in measured:
        return
    turns, acts = measured["chain3"], measured["activity"]
    per_chain = {side: 4 / turns[side] + 3 / acts[side] for side in ("ours", "microsoft")}
    out.append(
        f"  a whole 3-activity chain (4 turns of chain3 + 3 activities): ours {per_chain['ours'] * 1e3:.2f} ms, "
        f"microsoft {per_chain['microsoft'] * 1e3:.2f} ms of worker CPU: "
        f"{per_chain['microsoft'] / per_chain['ours']:.2f}x less ({targets.at_least(targets.WORKER_CPU)})"
    )
    print(out[-1], flush=True)


def bench_memory(quick: bool, out: list[str]) -> None:
    held = 2_000 if quick else HELD
    # The same items with and without sessions: the difference is what holding the orchestrations costs.
    kept = measure("held", held, "ours", ["--cache", str(held * 2)], ["--sessions"])
    plain = measure("held", held, "ours", ["--cache", "0"], [])
    grow_kept = kept["rss"][1] - kept["rss"][0]
    grow_plain = plain["rss"][1] - plain["rss"][0]
    each = (grow_kept - grow_plain) / held
    at_target = kept["rss"][1] + each * (HELD - held)
    out.append(
        f"  memory: {held:,} orchestrations (2 turns of chain(100)) held by extended sessions: worker RSS "
        f"{kept['rss'][1] / 2**20:.0f} MiB (+{grow_kept / 2**20:.1f} MiB over the run; the same items without "
        f"sessions +{grow_plain / 2**20:.1f} MiB) = {each / 1024:.1f} KiB per held orchestration; "
        f"{at_target / 2**20:.0f} MiB RSS with {HELD:,} held (target: under 200 MB)"
    )
    print(out[-1], flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rows", default=",".join([*ROWS, "memory"]))
    args = parser.parse_args()
    names = args.rows.split(",")
    out = ["Worker alone: work items per CPU-second of the worker process (bench/worker_feed.py feeds it)"]
    print(out[0], flush=True)
    whole_chain(bench_rows([n for n in names if n in ROWS], args.quick, args.rounds, out), out)
    if "memory" in names:
        bench_memory(args.quick, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
