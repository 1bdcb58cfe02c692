"""``langgraph.json``'s ``checkpointer.ttl``, read as LangGraph's server reads it: the TTL of threads made without one.

``default_ttl`` (minutes) and ``strategy`` (``delete`` or ``keep_latest``) apply to every thread created afterwards
without a ``ttl`` of its own, threads made by a run (``if_not_exists="create"``, threadless runs) included.
``sweep_interval_minutes`` and ``sweep_limit`` pace LangGraph's periodic sweep; each thread here has a durable
timer of its own instead, so they are checked and change nothing. Any other ``checkpointer`` key is refused: the
thread's history is its orchestration's, so a custom checkpointer has nothing to replace.
"""

from __future__ import annotations

import math
from typing import Any

#: The longest TTL of a thread, in minutes: ten years (the store's items take the same).
MAX_TTL_MINUTES = 10 * 365 * 24 * 60
#: What a thread's TTL does when it runs out.
STRATEGIES = ("delete", "keep_latest")
_TTL_KEYS = frozenset({"strategy", "default_ttl", "sweep_interval_minutes", "sweep_limit"})


def _whole(where: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{where} must be a whole number of at least 1")


def _ttl_object(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("checkpointer must be an object")
    for key in raw:
        if key != "ttl":
            raise ValueError(
                f"checkpointer.{key} is not supported: a thread's history is its orchestration's "
                "(only checkpointer.ttl is)"
            )
    ttl = raw.get("ttl")
    if ttl is not None and not isinstance(ttl, dict):
        raise ValueError("checkpointer.ttl must be an object")
    return ttl


def parse_checkpointer(raw: Any) -> dict[str, Any] | None:
    """The default TTL of new threads (``{"strategy", "ttl_minutes"}``), or ``None``; ``ValueError`` names the key."""
    ttl = _ttl_object(raw)
    if ttl is None:
        return None
    for key in ttl:
        if key not in _TTL_KEYS:
            raise ValueError(f"checkpointer.ttl.{key} is unknown; known: {', '.join(sorted(_TTL_KEYS))}")
    strategy = ttl.get("strategy", "delete")
    if strategy not in STRATEGIES:
        raise ValueError(f"checkpointer.ttl.strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    _whole("checkpointer.ttl.sweep_interval_minutes", ttl.get("sweep_interval_minutes"))
    _whole("checkpointer.ttl.sweep_limit", ttl.get("sweep_limit"))
    minutes = ttl.get("default_ttl")
    if minutes is None:
        return None
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
        raise ValueError("checkpointer.ttl.default_ttl must be a number of minutes")
    if not math.isfinite(minutes) or not 0 < minutes <= MAX_TTL_MINUTES:
        raise ValueError(f"checkpointer.ttl.default_ttl must be more than 0 and at most {MAX_TTL_MINUTES} minutes")
    return {"strategy": strategy, "ttl_minutes": minutes}
