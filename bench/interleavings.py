"""Long run of the interleaving checks: many seeds of every scenario under the seeded interleaver.

    python bench/interleavings.py [--sdk ours|microsoft|both] [--seeds 200 | --minutes 10] [--start N]
                                  [--scenarios a,b] [--rates expire=0.2,drop=0.05] [--json]

Each seed runs every scenario of tests/system/interleavings at once against one in-process emulator while the
interleaver perturbs it, then checks the invariants (order, exactly once, no double completion, well-formed
histories, status agrees with history). Seeds run one after another from ``--start`` (random unless given);
``DTS_INTERLEAVING_SEED`` runs just that one. At the end it reports how many seeds and interleaving steps it
covered, what the interleaver did, and every failing seed with its problems; it exits 1 if any seed failed.
Microsoft's worker runs from the peer venv (``python3 dev.py test`` creates it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dtscale_emulator.ops.faults import InterleavingRates  # noqa: E402 - after the path is set
from tests.system.interleavings import rig  # noqa: E402
from tests.system.interleavings.runner import SEED_ENV, Report, run_seed  # noqa: E402
from tests.system.interleavings.scenarios import SCENARIOS  # noqa: E402


def _seeds(args: argparse.Namespace) -> tuple[int, int | None]:
    """The first seed and how many to run (``None``: as many as ``--minutes`` allow)."""
    given = os.environ.get(SEED_ENV, "").strip()
    if given:
        return int(given), 1
    start = args.start if args.start is not None else random.SystemRandom().randrange(10**9)
    return start, args.seeds


def _run_sdk(sdk: str, args: argparse.Namespace, names: list[str], workdir: Path) -> list[Report]:
    seed, count = _seeds(args)
    deadline = time.monotonic() + args.minutes * 60
    reports: list[Report] = []
    rates = _rates(args.rates)
    with rig.open_rig(lambda clock: rig.seeded(0, clock, rates)) as r:
        r.start_worker(sdk)
        while len(reports) < count if count is not None else time.monotonic() < deadline:
            report = run_seed(r, sdk, seed, workdir, names)
            reports.append(report)
            if report.problems and not args.json:
                print(report.describe(), flush=True)
            seed += 1
    return reports


def _rates(text: str) -> InterleavingRates:
    """``"expire=0.2,drop=0.05"`` over the default rates."""
    known = {f.name for f in fields(InterleavingRates)}
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name not in known:
            raise SystemExit(f"unknown rate {name!r}; known: {', '.join(sorted(known))}")
        values[name] = float(value)
    return InterleavingRates(**values)


def _summary(sdk: str, reports: list[Report], seconds: float) -> dict[str, Any]:
    stats: dict[str, int] = {}
    for report in reports:
        for what, count in report.stats.items():
            stats[what] = stats.get(what, 0) + count
    return {
        "sdk": sdk,
        "seeds": len(reports),
        "first_seed": reports[0].seed if reports else None,
        "steps": sum(r.steps for r in reports),
        "instances": sum(r.instances for r in reports),
        "perturbations": stats,
        "failed_seeds": {r.seed: r.problems for r in reports if r.problems},
        "seconds": round(seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdk", choices=(*rig.SDKS, "both"), default="ours")
    parser.add_argument("--seeds", type=int, default=None, help="how many seeds (default: run for --minutes)")
    parser.add_argument("--minutes", type=float, default=2.0, help="how long to run when --seeds is not given")
    parser.add_argument("--start", type=int, default=None, help="the first seed (default: a random one)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated scenario names")
    parser.add_argument("--rates", default="", help="interleaving rates over the defaults, e.g. expire=0.2,drop=0.05")
    parser.add_argument("--json", action="store_true", help="print one JSON summary per SDK")
    args = parser.parse_args()
    names = [n for n in args.scenarios.split(",") if n]
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
    logging.disable(logging.WARNING)  # the workers log every refused completion and dropped stream
    failed = False
    with tempfile.TemporaryDirectory(prefix="interleavings-") as tmp:
        for sdk in rig.SDKS if args.sdk == "both" else (args.sdk,):
            began = time.monotonic()
            reports = _run_sdk(sdk, args, names, Path(tmp))
            summary = _summary(sdk, reports, time.monotonic() - began)
            failed = failed or bool(summary["failed_seeds"])
            if args.json:
                print(json.dumps(summary))
            else:
                print(
                    f"{sdk}: {summary['seeds']} seeds from {summary['first_seed']}, {summary['steps']} interleaving "
                    f"steps, {summary['instances']} instances checked in {summary['seconds']} s; "
                    f"perturbations {summary['perturbations']}; failed seeds {sorted(summary['failed_seeds'])}"
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
