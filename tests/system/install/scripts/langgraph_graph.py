"""A LangGraph graph run durably and in plain LangGraph, in whichever venv runs this script.

Run by the install tests with a venv's interpreter after ``pip install 'dtscale[langgraph]'`` from this checkout's
wheels. The same review graph (a node, a ``Send`` fan-out, an ``interrupt()`` for approval, a reducer) runs through
``DurableGraph`` on an emulator started in this process and through ``graph.invoke`` with an ``InMemorySaver``.
Prints one JSON line: both sides' results at the interrupt and after the resume, the interrupt IDs, the installed
distributions and where ``durabletask`` and ``langgraph`` were imported from.
"""

from __future__ import annotations

import importlib.metadata
import json
import operator
from typing import Annotated, Any, TypedDict

import langgraph.graph
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

import durabletask
from durabletask import client, worker
from durabletask.extensions.langgraph import DurableGraph, register_graph

DISTRIBUTIONS = ("dtscale", "dtscale-emulator", "langgraph", "langgraph-checkpoint", "langchain-core", "durabletask")


class Review(TypedDict, total=False):
    topic: str
    sections: list[str]
    drafts: Annotated[list[str], operator.add]
    verdict: str


def outline(state: Review) -> dict[str, Any]:
    return {"sections": [f"{state['topic']} part {n}" for n in range(1, 4)]}


def fan_out(state: Review) -> list[Send]:
    return [Send("draft", {"topic": section}) for section in state["sections"]]


def draft(state: Review) -> dict[str, Any]:
    return {"drafts": [state["topic"].upper()]}


def approve(state: Review) -> dict[str, Any]:
    answer = interrupt({"question": "publish?", "drafts": sorted(state["drafts"])})
    return {"verdict": f"{answer}: {len(state['drafts'])} drafts"}


def build() -> Any:
    builder = StateGraph(Review)
    builder.add_node("outline", outline)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_edge(START, "outline")
    builder.add_conditional_edges("outline", fan_out, ["draft"])
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", END)
    return builder


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A run's result with its interrupts' values (their IDs derive from checkpoint IDs, which differ by design)."""
    out = {k: v for k, v in result.items() if k != "__interrupt__"}
    out["interrupts"] = [i.value for i in result.get("__interrupt__", [])]
    return out


def plain(config: dict[str, Any]) -> list[dict[str, Any]]:
    graph = build().compile(checkpointer=InMemorySaver())
    first = graph.invoke({"topic": "wheels"}, config)
    second = graph.invoke(Command(resume="approved"), config)
    return [comparable(first), comparable(second)]


def durable(config: dict[str, Any]) -> list[dict[str, Any]]:
    from dtscale_emulator import EmulatorServer

    server = EmulatorServer(port=0, in_memory=True).start()
    w = worker.TaskHubGrpcWorker(host_address=server.address)
    register_graph(w, "review", build().compile())
    w.start()
    try:
        app = DurableGraph(client.TaskHubGrpcClient(host_address=server.address), "review", build().compile())
        first = app.invoke({"topic": "wheels"}, config)
        second = app.invoke(Command(resume="approved"), config)
        return [comparable(first), comparable(second)]
    finally:
        w.stop()
        server.stop()


def installed() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def main() -> None:
    config = {"configurable": {"thread_id": "install-check"}}
    outcome = {
        "plain": plain(config),
        "durable": durable(config),
        "distributions": installed(),
        "durabletask_module": durabletask.__file__,
        "langgraph_module": langgraph.graph.__file__,
    }
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
