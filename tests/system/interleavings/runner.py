"""One seed's run: every scenario at once under the seeded interleaver, then every check on what they left.

Shared by the test suite and ``bench/interleavings.py``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dtscale_emulator.ops.faults import SeededInterleaver
from durabletask._proto import orchestrator_service_pb2 as pb

from .invariants import history_problems, status_problems
from .rig import Rig
from .scenarios import SCENARIOS, Outcome, Run

#: The environment variable that replays one seed (in the suite and in the long run).
SEED_ENV = "DTS_INTERLEAVING_SEED"


@dataclass
class Report:
    seed: int
    sdk: str
    problems: list[str] = field(default_factory=list)
    steps: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    instances: int = 0

    def describe(self) -> str:
        lines = [f"seed {self.seed} with {self.sdk}'s worker: {len(self.problems)} problems"]
        lines += [f"  - {p}" for p in self.problems]
        lines.append(f"replay with {SEED_ENV}={self.seed}")
        return "\n".join(lines)


def _scenario(run: Run, name: str) -> Outcome:
    try:
        return SCENARIOS[name](run)
    except Exception as error:
        # What the instances it started were left in says more than where the client gave up.
        found = [f"scenario {name} raised {type(error).__name__}: {error}"]
        for instance_id in run.started:
            record, history, _ = run.rig.record_and_history(instance_id)
            status = "missing" if record is None else pb.OrchestrationStatus.Name(record.status)
            kinds = [e.WhichOneof("eventType") for e in history[-8:]]
            started = [e.executionStarted.input.value for e in history if e.HasField("executionStarted")]
            found.append(
                f"{instance_id}: {status}, history ends {kinds}, input {started}, queued {run.rig.queued(instance_id)}"
            )
        return Outcome(instances=list(run.started), problems=found)


def _checked(rig: Rig, instance_id: str) -> list[str]:
    record, history, length = rig.record_and_history(instance_id)
    if record is None:
        return [f"{instance_id}: not stored"]
    finished = record.status == pb.ORCHESTRATION_STATUS_COMPLETED
    found = history_problems(history, length, finished) + status_problems(record, history)
    return [f"{instance_id}: {p}" for p in found]


def run_seed(rig: Rig, sdk: str, seed: int, workdir: Path, names: Sequence[str] = tuple(SCENARIOS)) -> Report:
    """Runs ``names`` concurrently with the rig's interleaver reseeded to ``seed``; returns what the checks found."""
    interleaver = rig.interleaver
    assert isinstance(interleaver, SeededInterleaver)
    interleaver.reseed(seed)
    # The interleaver's decisions follow the keys of the work, so the names depend on the seed alone.
    tag = f"s{seed}-{sdk[:2]}"
    runs = [Run(rig, f"{tag}-{name}", random.Random(f"{seed}/{name}"), workdir) for name in names]
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        outcomes = list(pool.map(_scenario, runs, names))
    report = Report(seed, sdk)
    for outcome in outcomes:
        report.problems.extend(outcome.problems)
        for instance_id in outcome.instances:
            report.problems.extend(_checked(rig, instance_id))
        report.instances += len(outcome.instances)
    report.problems.extend(
        f"{kind} completion {token} accepted twice" for kind, token in interleaver.double_completions
    )
    report.steps = interleaver.steps
    report.stats = dict(interleaver.stats)
    return report
