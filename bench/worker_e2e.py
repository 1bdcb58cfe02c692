"""The worker end to end: 3-activity chains through our emulator, our worker against Microsoft's, CPU from /proc.

Each round starts, per side, our emulator (SQLite) in one process, the side's worker alone in a second and one
client in a third (bench/run_all.py's ``throughput`` scenario): the client schedules every chain at once and waits
for all of them. Per side and round it reports the worker process's CPU per orchestration, the throughput, and
one orchestration's latency (creation to completion, both stamped by the emulator) at p50 and p99. Sides run
interleaved, round by round, in the same minutes; the summary takes each figure's median over the rounds.
Prints, never asserts.

Sides: ``ours`` (our SDK's worker and client) and ``microsoft`` (Microsoft's, from the peer venv), both on our
emulator, so the backend's work is the same on both; and three workers with no SDK (bench/worker_chain_floor_proc.py:
the chain answered with hand-built protobuf), the least any Python worker spends here with each design: ``bare``
places the work as both SDKs do (every item handed to a pool thread, completed there with a blocking call),
``bare turns here`` answers turns on the reading thread and sends their completions as futures (activities still
handed over), ``bare inline`` answers every item on the reading thread with blocking calls (no hand-over at all, at
the price of waiting one round trip per item).

Usage: .venv/bin/python bench/worker_e2e.py [--count 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402
import targets  # noqa: E402

# run_all's pairs (the SDK's worker on our SQLite emulator) and the worker script each side runs
SIDES = {
    "ours": ("ours", ("worker_proc.py",)),
    "microsoft": ("mixed", ("worker_proc.py",)),
    "bare": ("ours", ("worker_chain_floor_proc.py",)),
    "bare turns here": ("ours", ("worker_chain_floor_proc.py", "--turns-here")),
    "bare inline": ("ours", ("worker_chain_floor_proc.py", "--inline")),
}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def measure(side: str, count: int) -> dict[str, Any]:
    pair, worker = SIDES[side]
    r = run_all.scenario(pair, "throughput", count, worker=worker)
    worker_cpu = r["cpu"][1]
    latencies = r.get("latencies", [])
    return {
        "cpu_ms": None if worker_cpu is None else worker_cpu * 1000 / count,
        "per_second": r["per_second"],
        "p50_ms": _quantile(latencies, 0.50) * 1000,
        "p99_ms": _quantile(latencies, 0.99) * 1000,
    }


def _fmt(run: dict[str, Any]) -> str:
    cpu = "n/a" if run["cpu_ms"] is None else f"{run['cpu_ms']:.2f} ms"
    return (f"worker CPU {cpu}/orchestration, {run['per_second']:.1f} orchestrations/s, "
            f"latency p50 {run['p50_ms']:.0f} ms p99 {run['p99_ms']:.0f} ms")  # fmt: skip


def _median(runs: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    run_all.SELECTED.update(pair for pair, _ in SIDES.values())
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for number in range(1, args.rounds + 1):
        for side in SIDES:
            runs[side].append(measure(side, args.count))
            print(f"round {number} {side:15s} {_fmt(runs[side][-1])}", flush=True)
    medians = {side: {key: _median(found, key) for key in found[0]} for side, found in runs.items()}
    for side, figures in medians.items():
        print(f"median  {side:15s} {_fmt(figures)}")
    ours, theirs, bare, inline = medians["ours"], medians["microsoft"], medians["bare"], medians["bare inline"]
    here = medians["bare turns here"]
    print(
        f"ours / microsoft: worker CPU per orchestration {theirs['cpu_ms'] / ours['cpu_ms']:.2f}x less "
        f"({targets.at_least(targets.WORKER_CPU)}; "
        f"the bare worker reaches {theirs['cpu_ms'] / bare['cpu_ms']:.2f}x, its {bare['cpu_ms']:.2f} ms the least a "
        f"Python worker placing work as ours does spends here, so ours spends {ours['cpu_ms'] - bare['cpu_ms']:.2f} ms "
        f"of its own; with turns on the reading thread {theirs['cpu_ms'] / here['cpu_ms']:.2f}x; "
        f"with no hand-over at all {theirs['cpu_ms'] / inline['cpu_ms']:.2f}x); "
        f"throughput {ours['per_second'] / theirs['per_second']:.2f}x; "
        f"p50 latency {theirs['p50_ms'] / ours['p50_ms']:.2f}x, p99 {theirs['p99_ms'] / ours['p99_ms']:.2f}x "
        "(above 1: ours is faster)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
