"""Which graph changes a waiting thread goes on across, and how each is named."""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from durabletask.extensions.langgraph._changes import compatible, describe, incompatible
from durabletask.extensions.langgraph._naming import shape

pytestmark = pytest.mark.adversarial


class S(TypedDict):
    x: int
    items: Annotated[list[Any], operator.add]


class Summed(TypedDict):
    x: Annotated[int, operator.add]
    items: Annotated[list[Any], operator.add]


def _shape(nodes: list[str], state: type = S) -> dict[str, Any]:
    b = StateGraph(state)
    for n in nodes:
        b.add_node(n, lambda s: {})
    b.add_edge(START, nodes[0])
    for a, c in itertools.pairwise(nodes):
        b.add_edge(a, c)
    b.add_edge(nodes[-1], END)
    return shape(b.compile())


def test_the_same_graph_has_no_change() -> None:
    assert incompatible(_shape(["a", "b"]), _shape(["a", "b"])) == []
    assert compatible(_shape(["a", "b"]), _shape(["a", "b"])) == []


def test_each_change_is_named_and_judged() -> None:
    old = _shape(["a", "b"])
    added = _shape(["a", "b", "c"])
    assert incompatible(old, added) == [] and "node 'c' added" in compatible(old, added)
    assert incompatible(added, old) == ["node 'c' removed"]
    renamed = _shape(["a", "z"])
    assert incompatible(old, renamed) == ["node 'b' removed"]
    assert describe(old, renamed).startswith("node 'b' removed; node 'z' added")
    reduced = _shape(["a", "b"], Summed)
    assert incompatible(old, reduced) == ["state key 'x' changed from LastValue to BinaryOperatorAggregate"]
