"""Instance IDs, names and graph fingerprints."""

from __future__ import annotations

import itertools
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from durabletask.extensions.langgraph import MissingThreadIdError
from durabletask.extensions.langgraph._naming import (
    MAX_INSTANCE_ID,
    activity_name,
    fingerprint,
    instance_id,
    orchestrator_name,
    thread_id_of,
)


class S(TypedDict):
    x: int


def _graph(*nodes: str) -> Any:
    b = StateGraph(S)
    for n in nodes:
        b.add_node(n, lambda s: s)
    b.add_edge(START, nodes[0])
    for a, c in itertools.pairwise(nodes):
        b.add_edge(a, c)
    return b.compile()


def test_names() -> None:
    assert orchestrator_name("support") == "lg:support"
    assert activity_name("support", "tools") == "lg:support:tools"
    assert instance_id("support", "ticket-42") == "lg:support:ticket-42"


def test_long_thread_ids_are_hashed_within_the_limit() -> None:
    long_a, long_b = "a" * 200, "a" * 199 + "b"
    first, second = instance_id("g", long_a), instance_id("g", long_b)
    assert len(first) == len(second) == MAX_INSTANCE_ID
    assert first != second and first == instance_id("g", long_a)
    assert len(instance_id("g", "x" * (MAX_INSTANCE_ID - 5))) == MAX_INSTANCE_ID
    with pytest.raises(ValueError, match="too long"):
        instance_id("g" * 120, "t" * 10)


def test_thread_id_is_required() -> None:
    assert thread_id_of({"configurable": {"thread_id": 7}}) == "7"
    for config in (None, {}, {"configurable": {}}, {"configurable": {"thread_id": ""}}):
        with pytest.raises(MissingThreadIdError, match="thread_id"):
            thread_id_of(config)


def test_fingerprint_sees_the_graphs_shape() -> None:
    assert fingerprint(_graph("a", "b")) == fingerprint(_graph("a", "b"))
    assert fingerprint(_graph("a", "b")) != fingerprint(_graph("a", "c"))
    assert fingerprint(_graph("a", "b")) != fingerprint(_graph("b", "a"))
