"""Fingerprints are stable, canonical, and name exactly which parts differ; the attach plan follows the state."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from durabletask._attach.decision import (
    AttachAction,
    AttachedInstanceFailedError,
    FingerprintMismatchError,
    plan_attach,
)
from durabletask._attach.fingerprint import Fingerprint, code_hash, input_hash


def orchestrator_a(ctx: Any, value: int) -> Any:
    result = yield ctx.call_activity("step", input=value)
    return result


def orchestrator_b(ctx: Any, value: int) -> Any:
    result = yield ctx.call_activity("other_step", input=value)
    return result


def test_input_hash_is_canonical() -> None:
    assert input_hash('{"b":1,"a":[1,2]}') == input_hash('{ "a": [1, 2], "b": 1 }')
    assert input_hash('{"a":1}') != input_hash('{"a":2}')
    assert input_hash(None) == input_hash("null")


def test_code_hash_differs_by_code_and_is_stable_across_processes(tmp_path: Path) -> None:
    assert code_hash(orchestrator_a) != code_hash(orchestrator_b)
    module = tmp_path / "flows.py"
    module.write_text(textwrap.dedent("""
        def flow(ctx, x):
            y = yield ctx.call_activity("a", input=x)
            return y
    """))
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import flows;"
              "from durabletask._attach.fingerprint import code_hash; print(code_hash(flows.flow))")
    runs = {subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                           check=True).stdout.strip() for _ in range(2)}
    assert len(runs) == 1 and len(runs.pop()) == 64


def test_tags_round_trip_and_differences_list_each_part() -> None:
    fp = Fingerprint.compute("flow", "1.0", '{"order":1}', orchestrator_a)
    assert Fingerprint.from_tags(fp.to_tags()) == fp
    other = Fingerprint.compute("flow2", "2.0", '{"order":2}', orchestrator_b)
    diffs = other.differences(fp)
    assert [d.split(":")[0] for d in diffs] == ["orchestrator", "version", "input", "code"]
    # A missing code hash on one side is not a difference.
    assert Fingerprint.compute("flow", "1.0", '{"order":1}').differences(fp) == []


class Status(Enum):
    RUNNING = 1
    COMPLETED = 2
    FAILED = 3
    TERMINATED = 4
    PENDING = 5


@dataclass
class Failure:
    error_type: str
    message: str


@dataclass
class State:
    runtime_status: Status
    # Where OrchestrationState keeps the fingerprint it takes out of the stored tags.
    _fingerprint_tags: dict[str, str] = field(default_factory=dict)
    failure_details: Failure | None = None


WANTED = Fingerprint.compute("flow", None, "[1,2]", orchestrator_a)


@pytest.mark.parametrize(("status", "action"), [(Status.RUNNING, AttachAction.ATTACHED),
                                                (Status.PENDING, AttachAction.ATTACHED),
                                                (Status.COMPLETED, AttachAction.ALREADY_COMPLETED)])
def test_plan_follows_status(status: Status, action: AttachAction) -> None:
    assert plan_attach("i", State(status, WANTED.to_tags()), WANTED, rewind_if_failed=False).action == action


def test_plan_for_missing_failed_and_mismatched_instances() -> None:
    assert plan_attach("i", None, WANTED, rewind_if_failed=False).action == AttachAction.STARTED
    failed = State(Status.FAILED, WANTED.to_tags(), Failure("ValueError", "bad"))
    with pytest.raises(AttachedInstanceFailedError, match=r"FAILED: ValueError: bad.*rewind_if_failed"):
        plan_attach("i", failed, WANTED, rewind_if_failed=False)
    assert plan_attach("i", failed, WANTED, rewind_if_failed=True).action == AttachAction.REWOUND
    with pytest.raises(AttachedInstanceFailedError, match="TERMINATED"):
        plan_attach("i", State(Status.TERMINATED, WANTED.to_tags()), WANTED, rewind_if_failed=True)
    other_input = Fingerprint.compute("flow", None, "[1,3]", orchestrator_a)
    with pytest.raises(FingerprintMismatchError) as excinfo:
        plan_attach("i", State(Status.RUNNING, WANTED.to_tags()), other_input, rewind_if_failed=False)
    assert len(excinfo.value.differences) == 1 and excinfo.value.differences[0].startswith("input:")
    with pytest.raises(FingerprintMismatchError, match="no fingerprint"):
        plan_attach("i", State(Status.RUNNING), WANTED, rewind_if_failed=False)
