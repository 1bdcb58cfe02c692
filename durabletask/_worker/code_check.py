"""Compares an instance's recorded code hash with the registered orchestrator's, under a configurable policy."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from durabletask._attach.fingerprint import TAG_CODE, code_hash
from durabletask._proto import orchestrator_service_pb2 as pb


class CodeMismatchPolicy(Enum):
    """What a worker does with an instance started by different orchestrator code than it has registered.

    ``IGNORE``: run it silently. ``LOG``: run it and log a warning (the default). ``ABANDON``: hand the work item
    back so a worker with matching code takes it. ``FAIL``: fail the orchestration with a clear error.
    """

    IGNORE = "ignore"
    LOG = "log"
    ABANDON = "abandon"
    FAIL = "fail"


@dataclass(frozen=True)
class CodeCheck:
    """The outcome of a check: ``ok`` or a message and the policy to apply."""

    ok: bool
    message: str = ""
    policy: CodeMismatchPolicy = CodeMismatchPolicy.LOG


_OK = CodeCheck(True)


def recorded_start(events: Iterable[pb.HistoryEvent]) -> pb.ExecutionStartedEvent | None:
    for event in events:
        if event.HasField("executionStarted"):
            return event.executionStarted
    return None


def check_code(
    start: pb.ExecutionStartedEvent | None, fn: Callable[..., Any] | None, policy: CodeMismatchPolicy
) -> CodeCheck:
    """Compare the code hash recorded when the instance started with ``fn``'s; unknown on either side is a match."""
    if policy is CodeMismatchPolicy.IGNORE or start is None or fn is None:
        return _OK
    recorded = start.tags.get(TAG_CODE)
    if not recorded:
        return _OK
    current = code_hash(fn)
    if current is None or current == recorded:
        return _OK
    return CodeCheck(
        False,
        f"orchestrator '{start.name}' was started with code sha256 {recorded[:12]}… but this "
        f"worker has code sha256 {current[:12]}…",
        policy,
    )
