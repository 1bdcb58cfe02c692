"""Fixtures for the LangGraph tests: a worker serving a graph, a DurableGraph client, plain-LangGraph references."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from durabletask.extensions.langgraph import DurableGraph, register_graph
from durabletask.worker import ExtendedSessionOptions
from tests.e2e.conftest import Hub
from tests.e2e.langgraph import graphs


@pytest.fixture(autouse=True)
def _fresh_counters() -> None:
    graphs.CALLS.clear()
    graphs.KEYS.clear()


@pytest.fixture(
    params=[
        "sessions",
        pytest.param(
            "full-replay",
            marks=pytest.mark.emulator_internals("turns extended sessions off through our worker's own option"),
        ),
    ]
)
def replay_mode(request: pytest.FixtureRequest) -> str:
    """Every graph runs once with extended sessions and once with them off (a full replay every turn)."""
    return str(request.param)


Serve = Callable[..., DurableGraph]


@pytest.fixture
def serve(hub: Hub, replay_mode: str) -> Serve:
    def start(builder: Any, *, name: str | None = None, **compile_kwargs: Any) -> DurableGraph:
        name = name or f"g{uuid.uuid4().hex[:8]}"
        options: dict[str, Any] = {}
        if replay_mode == "full-replay":
            options["extended_sessions"] = ExtendedSessionOptions(max_cached_orchestrations=0)
        worker = hub.worker(**options)
        register_graph(worker, name, _compiled(builder, **compile_kwargs))
        worker.start()
        return DurableGraph(hub.client(), name, _compiled(builder, **compile_kwargs))

    return start


def _compiled(builder: Any, **compile_kwargs: Any) -> Any:
    """A builder compiled (without a checkpointer), or an already compiled graph as it is."""
    return builder.compile(**compile_kwargs) if hasattr(builder, "compile") else builder


def reference(builder: Any, **compile_kwargs: Any) -> Any:
    """The same graph in plain LangGraph with an ``InMemorySaver``."""
    return builder.compile(checkpointer=InMemorySaver(), **compile_kwargs)


def thread(name: str | None = None) -> dict[str, Any]:
    return {"configurable": {"thread_id": name or uuid.uuid4().hex}}


def interrupt_values(output: Any) -> Any:
    """An invoke output with each interrupt reduced to its value (interrupt ids derive from checkpoint ids)."""
    if isinstance(output, dict) and "__interrupt__" in output:
        return {**output, "__interrupt__": sorted(repr(i.value) for i in output["__interrupt__"])}
    return output
