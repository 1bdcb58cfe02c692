"""A graph redeployed while threads wait at an interrupt: one outcome per kind of change, never a failed thread."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from durabletask.client import OrchestrationStatus
from durabletask.extensions.langgraph import (
    DurableGraph,
    GraphMismatchError,
    _orchestrator,
    instance_id,
    register_graph,
)
from tests.e2e.conftest import Hub

pytestmark = pytest.mark.adversarial


class Items(TypedDict):
    x: int
    items: Annotated[list[Any], operator.add]


class Wider(Items):
    note: str


class Narrower(TypedDict):
    items: Annotated[list[Any], operator.add]


class Retyped(TypedDict):
    x: Annotated[int, operator.add]
    items: Annotated[list[Any], operator.add]


def _ask(s: Any) -> dict[str, Any]:
    return {"items": [f"ask:{interrupt('ok?')}"]}


def _step(name: str) -> Callable[[Any], dict[str, Any]]:
    return lambda s: {"items": [name]}


def build(nodes: list[str], edges: list[tuple[str, str]], state: type = Items) -> Any:
    """A graph of ``nodes`` (``ask`` / ``confirm`` interrupt, the rest append their name) joined by ``edges``."""
    b = StateGraph(state)
    for node in nodes:
        b.add_node(node, _ask if node in ("ask", "confirm") else _step(node))
    for source, target in edges:
        b.add_edge(source, target)
    return b.compile()


def v1() -> Any:
    return build(["plan", "ask", "tail"], [(START, "plan"), ("plan", "ask"), ("ask", "tail"), ("tail", END)])


class Deployment:
    """One worker at a time serving the graph under one name, as a deploy replaces workers."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.name = f"rd{uuid.uuid4().hex[:8]}"
        self.worker: Any = None

    def serve(self, graph: Any) -> None:
        if self.worker is not None:
            self.worker.stop()
        self.worker = self.hub.worker()
        register_graph(self.worker, self.name, graph)
        self.worker.start()

    def client(self, graph: Any) -> DurableGraph:
        return DurableGraph(self.hub.client(), self.name, graph)


def _waiting_thread(deploy: Deployment) -> tuple[dict[str, Any], Any]:
    """A thread of ``v1`` waiting at ``ask``, then the workers redeployed with the changed graph."""
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    deploy.serve(v1())
    out = deploy.client(v1()).invoke({"x": 1, "items": []}, cfg)
    assert [i.value for i in out["__interrupt__"]] == ["ok?"]
    return cfg, out["__interrupt__"]


def _status(deploy: Deployment, cfg: dict[str, Any]) -> OrchestrationStatus:
    state = deploy.hub.client().get_orchestration_state(instance_id(deploy.name, cfg["configurable"]["thread_id"]))
    assert state is not None
    return state.runtime_status


GOES_ON = {
    "node added after the waiting point": (
        build(
            ["plan", "ask", "tail", "extra"],
            [(START, "plan"), ("plan", "ask"), ("ask", "tail"), ("tail", "extra"), ("extra", END)],
        ),
        ["plan", "ask:yes", "tail", "extra"],
    ),
    "edge changed": (
        build(
            ["plan", "ask", "tail", "other"],
            [(START, "plan"), ("plan", "ask"), ("ask", "other"), ("other", END), ("tail", END)],
        ),
        ["plan", "ask:yes", "other"],
    ),
    "state key added": (
        build(["plan", "ask", "tail"], [(START, "plan"), ("plan", "ask"), ("ask", "tail"), ("tail", END)], Wider),
        ["plan", "ask:yes", "tail"],
    ),
}

REFUSED = {
    "node removed after the waiting point": (
        build(["plan", "ask"], [(START, "plan"), ("plan", "ask"), ("ask", END)]),
        "node 'tail' removed",
    ),
    "waiting node renamed": (
        build(["plan", "confirm", "tail"], [(START, "plan"), ("plan", "confirm"), ("confirm", "tail"), ("tail", END)]),
        "node 'ask' removed",
    ),
    "state key removed": (
        build(["plan", "ask", "tail"], [(START, "plan"), ("plan", "ask"), ("ask", "tail"), ("tail", END)], Narrower),
        "state key 'x' removed",
    ),
    "state key's reducer changed": (
        build(["plan", "ask", "tail"], [(START, "plan"), ("plan", "ask"), ("ask", "tail"), ("tail", END)], Retyped),
        "state key 'x' changed",
    ),
}


@pytest.mark.parametrize("change", list(GOES_ON))
def test_a_compatible_change_carries_the_waiting_thread_on_under_the_new_graph(hub: Hub, change: str) -> None:
    new, expected = GOES_ON[change]
    deploy = Deployment(hub)
    cfg, asked = _waiting_thread(deploy)
    deploy.serve(new)
    # A client still holding the old graph is told the workers run another one; the thread keeps waiting.
    with pytest.raises(GraphMismatchError, match="graph"):
        deploy.client(v1()).invoke(Command(resume="yes"), cfg)
    assert _status(deploy, cfg) == OrchestrationStatus.RUNNING
    done = deploy.client(new).invoke(Command(resume={i.id: "yes" for i in asked}), cfg)
    assert done["items"] == expected
    assert deploy.client(new).get_state(cfg).next == ()


@pytest.mark.parametrize("change", list(REFUSED))
def test_an_incompatible_change_is_refused_and_the_thread_waits_for_its_graph(hub: Hub, change: str) -> None:
    new, named = REFUSED[change]
    deploy = Deployment(hub)
    cfg, asked = _waiting_thread(deploy)
    deploy.serve(new)
    for graph in (new, v1()):  # whether the resume comes from a new-graph or an old-graph client
        with pytest.raises(GraphMismatchError, match=named):
            deploy.client(graph).invoke(Command(resume="yes"), cfg)
        assert _status(deploy, cfg) == OrchestrationStatus.RUNNING
    assert deploy.client(v1()).get_state(cfg).next == ("ask",)
    # Rolled back, the workers serve the thread's graph again and the same resume goes through.
    deploy.serve(v1())
    done = deploy.client(v1()).invoke(Command(resume={i.id: "yes" for i in asked}), cfg)
    assert done["items"] == ["plan", "ask:yes", "tail"]


def _scheduled(deploy: Deployment, cfg: dict[str, Any]) -> int:
    iid = instance_id(deploy.name, cfg["configurable"]["thread_id"])
    return sum(type(e).__name__ == "TaskScheduledEvent" for e in deploy.hub.client().get_orchestration_history(iid))


def test_a_thread_whose_execution_holds_earlier_runs_replays_them_and_then_ends_it(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Threads started before runs ended their executions wait in an execution that holds their runs.
    monkeypatch.setattr(_orchestrator.ThreadRuntime, "seal", lambda self: False)
    deploy = Deployment(hub)
    cfg, asked = _waiting_thread(deploy)
    assert _scheduled(deploy, cfg) == 3  # __start__, plan, ask
    monkeypatch.undo()
    deploy.serve(v1())  # a new worker process replays the execution from its history
    done = deploy.client(v1()).invoke(Command(resume={i.id: "yes" for i in asked}), cfg)
    assert done["items"] == ["plan", "ask:yes", "tail"]
    assert _scheduled(deploy, cfg) == 0  # that run ended the execution: the thread waits in a new one
    assert deploy.client(v1()).invoke({"x": 2, "items": []}, cfg)["__interrupt__"]


def _orchestrating(hub: Hub, name: str, graph: Any) -> Any:
    """A worker that drives the graph's threads and runs no node of its own."""
    worker = hub.worker()
    register_graph(worker, name, graph, nodes=[])
    worker.use_work_item_filters()
    worker.start()
    return worker


@pytest.mark.local_only("the gate that holds the node open is an object of this process")
def test_a_run_in_flight_when_another_graph_takes_its_next_turn_fails_and_the_thread_goes_on(hub: Hub) -> None:
    from concurrent.futures import ThreadPoolExecutor
    from threading import Event

    from durabletask.extensions.langgraph import GraphRunError
    from tests.e2e.langgraph import graphs

    gate, started = Event(), Event()
    name = f"rd{uuid.uuid4().hex[:8]}"
    nodes = hub.worker()
    register_graph(nodes, name, graphs.gated(gate, started).compile(), orchestrator=False)
    nodes.use_work_item_filters()
    nodes.start()
    first = _orchestrating(hub, name, graphs.gated(gate, started).compile())
    changed = graphs.gated(gate, started)
    changed.add_node("extra", _step("extra"))
    changed.add_edge("second", "extra")
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    app = DurableGraph(hub.client(), name, graphs.gated(gate, started).compile())
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(app.invoke, {"x": 0, "items": []}, cfg)
        assert started.wait(60)
        first.stop()
        second = _orchestrating(hub, name, changed.compile())  # the next turn replays the run with this graph
        gate.set()
        with pytest.raises(GraphRunError) as caught:
            running.result(timeout=60)
    assert caught.value.error_type.endswith("ForeignGraphError"), caught.value
    assert "node 'extra' added" in caught.value.error_message
    # Not bricked: served its own graph again, the thread starts over from the checkpoints it had before that run.
    second.stop()
    _orchestrating(hub, name, graphs.gated(gate, started).compile())
    assert app.invoke({"x": 0, "items": []}, cfg)["items"] == ["first", "second"]
