"""The emulator's invariants under many interleavings of concurrent work, with either SDK as the worker.

Every seed runs every scenario at once (events, entities, sub-orchestrations, timers, retries, continue-as-new,
rewind, suspend/resume/terminate) while the seeded interleaver delays and reorders sends, completions,
arrivals and timers, ends leases early, repeats completions and drops streams; then every check runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import peer_python

from . import rig
from .conftest import interleaving_seeds, note_seed
from .runner import run_seed

#: Microsoft's worker runs in a subprocess and starts slower: it gets fewer of the fixed seeds.
SEEDS = {"ours": interleaving_seeds(), "microsoft": interleaving_seeds((1, 2))}


@pytest.fixture(scope="module", params=rig.SDKS)
def sdk_rig(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, rig.Rig, Path]]:
    sdk = str(request.param)
    if sdk == "microsoft" and peer_python() is None:
        pytest.skip("the interop peer venv is missing (python3 dev.py test creates it)")
    with rig.open_rig(lambda clock: rig.seeded(0, clock)) as r:
        r.start_worker(sdk)
        yield sdk, r, tmp_path_factory.mktemp(f"interleavings-{sdk}")


@pytest.mark.parametrize("index", range(max(len(s) for s in SEEDS.values())))
def test_invariants_hold_under_seeded_interleavings(sdk_rig: tuple[str, rig.Rig, Path], index: int) -> None:
    sdk, r, workdir = sdk_rig
    seeds = SEEDS[sdk]
    if index >= len(seeds):
        pytest.skip(f"{sdk} runs {len(seeds)} seeds")
    seed = seeds[index]
    note_seed(seed)
    report = run_seed(r, sdk, seed, workdir)
    assert not report.problems, report.describe()
    # The interleaver really was at work: points met, and perturbations made.
    assert report.steps > 100 and report.stats.get("pause", 0) > 0, report.stats
