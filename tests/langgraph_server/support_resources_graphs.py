"""Small graphs served by the resource routes' tests: a chain, one with a subgraph node, and a factory."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    """The chain's state: a topic and the steps that ran."""

    topic: str
    steps: Annotated[list[str], operator.add]


class Context(TypedDict):
    """The chain's runtime context."""

    model_name: str


def _step(name: str) -> Any:
    def run(state: State) -> dict[str, Any]:
        return {"steps": [name]}

    return run


def _chain() -> Any:
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("plan", _step("plan"))
    builder.add_node("write", _step("write"))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "write")
    builder.add_edge("write", END)
    return builder


chain = _chain().compile()


def _inner() -> Any:
    builder = StateGraph(State)
    builder.add_node("draft", _step("draft"))
    builder.add_node("review", _step("review"))
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", END)
    return builder.compile()


def _nested() -> Any:
    builder = StateGraph(State)
    builder.add_node("intro", _step("intro"))
    builder.add_node("team", _inner())
    builder.add_edge(START, "intro")
    builder.add_edge("intro", "team")
    builder.add_edge("team", END)
    return builder.compile()


nested = _nested()


def make_chain(config: dict[str, Any]) -> Any:
    """A factory: the chain, with a node named after ``configurable.flavor`` (``plain`` by default)."""
    flavor = str(config.get("configurable", {}).get("flavor", "plain"))
    builder = _chain()
    builder.add_node(f"polish_{flavor}", _step(flavor))
    builder.add_edge("write", f"polish_{flavor}")
    return builder.compile()
