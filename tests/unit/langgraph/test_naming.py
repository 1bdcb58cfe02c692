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
    with pytest.raises(ValueError, match="the limit is 63"):
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


def _valid_instance_id(value: str) -> bool:
    return len(value) <= MAX_INSTANCE_ID and all(" " <= ch <= "~" for ch in value) and not value.startswith("@")


@pytest.mark.adversarial
def test_a_short_thread_id_equal_to_a_hashed_tail_gets_its_own_instance() -> None:
    long_thread = "victim-" + "v" * 150
    hashed = instance_id("g", long_thread)
    # Anyone who can list instances reads the tail and picks it as a thread ID of their own.
    forged = hashed.removeprefix("lg:g:")
    assert instance_id("g", forged) != hashed
    assert instance_id("g", forged) == instance_id("g", forged)


@pytest.mark.adversarial
@pytest.mark.parametrize(
    "threads",
    [
        ("a~b", "a_b", "a"),
        ("ticket-é", "ticket-e", "ticket-?", "ticket-_"),
        ("用户-42", "用户-43", "-42"),
        ("a\nb", "a\rb", "a b", "a\\nb", "ab"),
        ("x" * 95, "x" * 96, "x" * 200, "x" * 201),
        ("\x00", "\x7f", "~", " "),
    ],
)
def test_distinct_thread_ids_map_to_distinct_valid_instance_ids(threads: tuple[str, ...]) -> None:
    mapped = [instance_id("support", t) for t in threads]
    assert len(set(mapped)) == len(threads), mapped
    assert all(_valid_instance_id(m) for m in mapped), mapped
    assert all(m.startswith("lg:support:") for m in mapped)


@pytest.mark.adversarial
def test_plain_thread_ids_keep_the_instance_ids_they_had() -> None:
    # Threads started before the mapping escaped '~' and non-ASCII text keep their instances.
    assert instance_id("support", "ticket 42/a.b") == "lg:support:ticket 42/a.b"
    legacy_long = "a" * 200
    assert instance_id("g", legacy_long) == "lg:g:" + "a" * 62 + "~" + "c2a908d98f5df987ade41b5fce213067"


@pytest.mark.adversarial
@pytest.mark.parametrize("bad", ["a:b", "", "graph-é", "g\n", "g" * 64])
def test_graph_names_that_cannot_name_instances_are_refused(bad: str) -> None:
    from durabletask.extensions.langgraph import DurableGraph

    with pytest.raises(ValueError, match="graph name"):
        DurableGraph(object(), bad, _graph("a"))
