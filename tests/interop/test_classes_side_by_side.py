"""Public helper classes of Microsoft's modules, used the same way under both SDKs (``peer_scripts/class_probes.py``).

``StateShim`` behind an ``EntityContext`` (an entity function called from a unit test), the critical-section
bookkeeping of ``OrchestrationEntityContext``, ``ExecutionResults``, ``JsonEncodeOutputException``,
``TaskFailureDetails`` and the state records of the in-memory test backend.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from . import probes

pytestmark = [pytest.mark.interop, pytest.mark.local_only("runs both SDKs' classes, no backend")]

side_by_side = partial(probes.side_by_side, probes.PEER_SCRIPTS / "class_probes.py")


@pytest.fixture(scope="module")
def results(peer_py: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return side_by_side(peer_py)  # type: ignore[no-any-return]


def test_a_state_shim_behind_an_entity_context_runs_an_entity_function(
    results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    theirs, ours = results
    assert ours["state_shim"] == theirs["state_shim"]
    assert ours["state_shim"]["first"] == 7 and ours["state_shim"]["after_rollback"] == "7"


def test_orchestration_entity_context_keeps_a_critical_section_as_microsofts(
    results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    theirs, ours = results
    their_steps, our_steps = theirs["entity_context"], ours["entity_context"]
    assert [s[0] for s in our_steps] == [s[0] for s in their_steps]
    for mine, peer in zip(our_steps, their_steps, strict=True):
        if mine[0] == "released":
            # The same unlocks; Microsoft's class keeps one list for the locks and the callable ones, so an
            # entity called and returned moves to its end (docs/conformance.md).
            assert sorted(mine[1]) == sorted(peer[1]) and mine[2:] == peer[2:]
            continue
        assert mine == peer


def test_records_results_and_errors_are_microsofts(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    theirs, ours = results
    assert ours["records"] == theirs["records"]
    assert ours["others"] == theirs["others"]
