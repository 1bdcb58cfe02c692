"""The pieces of the ``events`` mode without a server: a run driven step by step with its tasks run in-process
gives in-process LangGraph's ``astream_events`` v2; values no serializer writes are cut out, and named."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any

import pytest
from langchain_core.callbacks import dispatch_custom_event
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send

from durabletask.extensions.langgraph import _activity, _driver, _internals
from durabletask.extensions.langgraph._events import EVENTS, root_context, writable
from durabletask.extensions.langgraph._saver import ReplaySaver
from durabletask.extensions.langgraph._serde import dump
from durabletask.extensions.langgraph._server.state import to_json
from tests.langgraph_server.support_events import normalised


def _fanned() -> Any:
    """A node that sends one task per word, each of which reports a custom event."""

    def split(state: MessagesState) -> dict[str, Any]:
        return {}

    def word(packet: dict[str, Any]) -> dict[str, Any]:
        dispatch_custom_event("word", {"word": packet["word"]})
        return {}

    def fan(state: MessagesState) -> list[Send]:
        return [Send("word", {"word": w}) for w in str(state["messages"][-1].content).split()]

    builder = StateGraph(MessagesState)
    builder.add_node("split", split)
    builder.add_node("word", word)
    builder.add_edge(START, "split")
    builder.add_conditional_edges("split", fan, ["word"])
    builder.add_edge("word", END)
    return builder


def _driven(graph: Any, inputs: Any, run_id: str) -> list[Any]:
    """The run's events, its tasks executed in-process through the activity's own code."""
    _internals.install_id_shim()
    chunks: list[Any] = []
    spec = _driver.RunSpec(inputs, stream_modes=(EVENTS,))
    gen = _driver.drive_run(
        graph, ReplaySaver(), "t", spec, graph_name="g", instance_id="lg:g:t", chunks=chunks, run_id=run_id
    )
    ids = _internals.IdSource(uuid.uuid4().hex)
    sent: Any = None
    while True:
        with _internals.deterministic_ids(ids):
            try:
                calls = gen.send(sent)
            except StopIteration:
                break
        outcomes = [_activity.execute_task(graph, c.payload) for c in calls]
        sent = [_driver.TaskOutcome.from_payload(o) for o in outcomes]
    return [to_json(payload) for _, mode, payload in chunks if mode == EVENTS]


async def _reference(graph: Any, inputs: Any, run_id: str) -> list[Any]:
    config: Any = {"run_id": uuid.UUID(run_id), "configurable": {"thread_id": "t"}}
    return [
        to_json(e)
        async for e in graph.astream_events(inputs, config, version="v2")
        if "langsmith:hidden" not in e["tags"] and not (e["event"] == "on_chain_stream" and e["run_id"] == run_id)
    ]


def test_a_driven_run_with_sends_gives_langgraph_events() -> None:
    # sync: a task's activity runs its node on an event loop of its own, as a worker's thread does
    inputs = {"messages": [{"role": "user", "content": "one two three"}]}
    run_id = str(uuid.uuid4())
    ours = _driven(_fanned().compile(), inputs, run_id)
    reference = asyncio.run(_reference(_fanned().compile(checkpointer=InMemorySaver()), inputs, run_id))
    # In-process, the three sent tasks run at once and their events interleave; each task's own are in order.
    assert _by_task(ours) == _by_task(reference)
    assert [e["data"]["word"] for e in ours if e["event"] == "on_custom_event"] == ["one", "two", "three"]


def _by_task(events: list[Any]) -> list[Any]:
    """Each task's events (those under one node's chain), normalised, in a fixed order; the run's own first."""
    groups: dict[str, list[Any]] = {}
    for event in events:
        parents = event["parent_ids"]
        groups.setdefault(parents[1] if len(parents) > 1 else event["run_id"], []).append(event)
    runs = [normalised(group) for group in groups.values()]
    return [runs[0], *sorted(runs[1:], key=repr)]


def test_a_run_id_that_is_not_a_uuid_names_the_same_run_each_time() -> None:
    graph = _fanned().compile()
    first = root_context(graph, {"metadata": {"a": 1}}, "lg:g:t")
    assert first == root_context(graph, {"metadata": {"a": 1}}, "lg:g:t")
    assert uuid.UUID(first["run_id"]) and first["metadata"] == {"a": 1, "ls_integration": "langgraph"}
    assert root_context(graph, {}, "lg:g:u")["run_id"] != first["run_id"]


@pytest.mark.adversarial
def test_writable_cuts_what_cannot_be_written_and_names_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="durabletask.langgraph.events")
    shared = [1, 2]
    looped: dict[str, Any] = {"ok": "yes"}
    looped["again"] = [looped, shared, shared]
    event = {
        "event": "on_custom_event",
        "name": "n",
        "data": {"lock": threading.Lock(), "x": (1, object()), "l": looped},
    }
    kept = writable(event, lambda value: dump(value, "a value"))
    assert kept["data"] == {"lock": None, "x": [1, None], "l": {"ok": "yes", "again": [None, [1, 2], [1, 2]]}}
    assert kept["event"] == "on_custom_event" and dump(kept, "the event")
    (message,) = [r.getMessage() for r in caplog.records]
    assert "data.lock (_thread.lock)" in message and "data.x[1] (builtins.object)" in message
    assert "data.l.again[0] (the value holding it)" in message
