"""What changed between the graph a thread was written by and another, and which changes a thread can go on across."""

from __future__ import annotations

from typing import Any


def _nodes(shape: dict[str, Any]) -> set[str]:
    return {name for name in shape["nodes"] if not name.startswith("__")}


def _state_keys(shape: dict[str, Any]) -> dict[str, str]:
    # LangGraph's own channels ('branch:to:x', '__start__', '__pregel_...') are wiring, not state.
    return {key: kind for key, kind in shape["channels"].items() if ":" not in key and not key.startswith("__")}


def incompatible(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The changes from ``old`` to ``new`` that a thread written by ``old`` cannot go on across.

    A removed (or renamed) node may be the one the thread waits in, or one a checkpoint has scheduled; a removed
    state key, or one whose channel kind changed (a reducer added or dropped), holds values the new graph would
    drop or read differently.
    """
    problems = [f"node '{node}' removed" for node in sorted(_nodes(old) - _nodes(new))]
    before, after = _state_keys(old), _state_keys(new)
    problems += [f"state key '{key}' removed" for key in sorted(set(before) - set(after))]
    problems += [
        f"state key '{key}' changed from {before[key]} to {after[key]}"
        for key in sorted(set(before) & set(after))
        if before[key] != after[key]
    ]
    return problems


def compatible(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The changes from ``old`` to ``new`` a thread goes on across: nodes and state keys added, edges changed."""
    changes = [f"node '{node}' added" for node in sorted(_nodes(new) - _nodes(old))]
    changes += [f"state key '{key}' added" for key in sorted(set(_state_keys(new)) - set(_state_keys(old)))]
    rewired = old["edges"] != new["edges"] or any(
        old["nodes"][name] != new["nodes"][name] for name in set(old["nodes"]) & set(new["nodes"])
    )
    if rewired:
        changes.append("edges changed")
    return changes


def describe(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Every change from ``old`` to ``new``, for a message."""
    return "; ".join(incompatible(old, new) + compatible(old, new)) or "its channels differ"
