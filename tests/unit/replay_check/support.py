"""Histories for replay-check tests: built with the replay tests' fluent builder, handed over as a client gives them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from durabletask._grpc.convert import history_event_from_pb
from durabletask.testing import OrchestrationHistory
from tests.unit.replay.history import History


def recorded(history: History, source: str = "test") -> OrchestrationHistory:
    """Every event of ``history`` (past and new) as public history events, as a client returns them."""
    return OrchestrationHistory(history.instance_id, [history_event_from_pb(e) for e in history.all], source)


def line_of(fn: Callable[..., Any], marker: str) -> int:
    """The line number of the (only) line of ``fn`` that contains ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    (found,) = [first + i for i, text in enumerate(lines) if marker in text]
    return found
