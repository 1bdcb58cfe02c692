"""The speed targets the benchmarks print beside their figures, in one place: those of issue #44 ("The durable
default at full speed"). Ratios, measured side by side in one run; the benchmarks print them, never assert them."""

from __future__ import annotations

#: Throughput of three-activity chains: ours (persistent store, default durability) over Microsoft's SDK on its
#: in-memory backend, at least (run_all.py section 2).
CHAIN3_THROUGHPUT = 2.0
#: A 1,000-activity fan-out, the same pairs: how many times faster ours is, at least (run_all.py section 3).
FAN_OUT_SPEEDUP = 2.5
#: The worker's CPU per work item: how many times less ours spends than Microsoft's worker, in its default
#: configuration, at least (worker_cpu.py; run_all.py sections 7 and 7b).
WORKER_CPU = 2.3
#: Starts per second under --durability full over normal at the same concurrency, at least: eight clients, one
#: client (durability.py; run_all.py section 11a).
FULL_OVER_NORMAL_8 = 0.9
FULL_OVER_NORMAL_1 = 0.85
#: The p99 latency of a start under full over normal, at most.
FULL_P99_OVER_NORMAL = 2.0


def at_least(ratio: float) -> str:
    """A lower bound on a ratio, as the reports print it."""
    return f"target >= {ratio:g}x"
