"""Recorded histories in tests/unit/replay/golden replay to the actions recorded with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.replay.golden.orchestrators import CODE
from tests.unit.replay.golden.record import replay

GOLDEN = Path(__file__).resolve().parent / "golden"


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    return document


def test_every_golden_file_has_code_to_replay_it() -> None:
    assert sorted(p.name for p in GOLDEN.glob("*.json")) == sorted(CODE)


@pytest.mark.parametrize("name", sorted(CODE))
def test_golden_history_replays_to_its_recorded_actions(name: str) -> None:
    document = load(name)
    assert replay(document, CODE[name]) == document["expectedActions"]


@pytest.mark.parametrize("name", [n for n in sorted(CODE) if "renamed" not in n])
def test_compatible_histories_complete(name: str) -> None:
    (last,) = replay(load(name), CODE[name])[-1:]
    assert last["completeOrchestration"]["orchestrationStatus"] == "ORCHESTRATION_STATUS_COMPLETED"


def test_renamed_activity_history_fails_with_non_determinism() -> None:
    (action,) = replay(load("order_pipeline_renamed_activity.json"), CODE["order_pipeline_renamed_activity.json"])
    done = action["completeOrchestration"]
    assert done["orchestrationStatus"] == "ORCHESTRATION_STATUS_FAILED"
    assert done["failureDetails"]["errorType"] == "durabletask.task.NonDeterminismError"
    message = done["failureDetails"]["errorMessage"]
    assert "call_activity('charge_card') with ID 2" in message
    assert "call_activity('charge_payment')" in message
