"""Graphs the run and thread tests serve: a chain, one that asks (interrupt), one that streams model tokens, one
with a subgraph, and one that holds its node until the test releases it (a file appears)."""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from durabletask.extensions.langgraph import heartbeat


class State(TypedDict):
    """A topic and the steps that ran."""

    topic: str
    steps: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    def run(state: State) -> dict[str, Any]:
        return {"steps": [f"{name}:{state.get('topic', '')}"]}

    return run


def chain_builder() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("plan", _step("plan"))
    builder.add_node("write", _step("write"))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "write")
    builder.add_edge("write", END)
    return builder


def _ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": f"approve {state.get('topic')}?"})
    return {"steps": [f"answer:{answer}"]}


def ask_builder() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("plan", _step("plan"))
    builder.add_node("ask", _ask)
    builder.add_node("write", _step("write"))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", "write")
    builder.add_edge("write", END)
    return builder


def _speak(state: MessagesState) -> dict[str, Any]:
    last = str(state["messages"][-1].content)
    model = GenericFakeChatModel(messages=iter([AIMessage(content=f"you said {last} to me", id="reply-1")]))
    return {"messages": [model.invoke(state["messages"])]}


def talk_builder() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("speak", _speak)
    builder.add_edge(START, "speak")
    builder.add_edge("speak", END)
    return builder


def nested_builder() -> StateGraph:
    inner = StateGraph(State)
    inner.add_node("draft", _step("draft"))
    inner.add_edge(START, "draft")
    inner.add_edge("draft", END)
    builder = StateGraph(State)
    builder.add_node("plan", _step("plan"))
    builder.add_node("inner", inner.compile())
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "inner")
    builder.add_edge("inner", END)
    return builder


def _held(state: State) -> dict[str, Any]:
    """Waits until the file the topic names exists (at most 120 s), so a test can act while it runs."""
    flag = Path(state["topic"])
    deadline = time.monotonic() + 120
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"steps": [f"held:{os.getpid()}"]}


def held_builder() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("plan", _step("plan"))
    builder.add_node("hold", _held)
    builder.add_node("write", _step("write"))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "hold")
    builder.add_edge("hold", "write")
    builder.add_edge("write", END)
    return builder


class LiveState(MessagesState):
    """Messages, and the file whose appearance lets the node end."""

    flag: str


def _live(state: LiveState) -> dict[str, Any]:
    """Streams a model's tokens, then waits for the test's file: tokens must reach the client meanwhile."""
    model = GenericFakeChatModel(messages=iter([AIMessage(content="one two three", id="live-1")]))
    reply = model.invoke(state["messages"])
    flag = Path(state["flag"])
    deadline = time.monotonic() + 120
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"messages": [reply]}


def live_builder() -> StateGraph:
    builder = StateGraph(LiveState)
    builder.add_node("live", _live)
    builder.add_edge(START, "live")
    builder.add_edge("live", END)
    return builder


def _whole(path: Path, text: str) -> None:
    """Write ``path`` so that a reader never sees it half written."""
    Path(f"{path}.part").write_text(text)
    Path(f"{path}.part").replace(path)


def _beat(state: State) -> dict[str, Any]:
    """Writes ``{topic}.started``, then heartbeats until its run is cancelled (at most 120 s); writes
    ``{topic}.cancelled`` when it saw the cancel."""
    _whole(Path(f"{state['topic']}.started"), "started")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            heartbeat({"at": time.monotonic()})
        except Exception as stop:
            _whole(Path(f"{state['topic']}.cancelled"), type(stop).__name__)
            raise
        time.sleep(0.02)
    return {"steps": ["beat:not cancelled"]}


def beat_builder() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("beat", _beat)
    builder.add_edge(START, "beat")
    builder.add_edge("beat", END)
    return builder


def _maybe_fail(state: State) -> dict[str, Any]:
    if state.get("topic") == "boom":
        raise ValueError("the topic is boom")
    return {"steps": [f"fine:{state.get('topic')}"]}


def fragile_builder() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("plan", _step("plan"))
    builder.add_node("risky", _maybe_fail)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "risky")
    builder.add_edge("risky", END)
    return builder


BUILDERS = {
    "chain": chain_builder,
    "ask": ask_builder,
    "talk": talk_builder,
    "nested": nested_builder,
    "held": held_builder,
    "live": live_builder,
    "beat": beat_builder,
    "fragile": fragile_builder,
    # with a thread's UUID, an instance ID of 71 characters: the control entity of its tasks needs a hashed key
    "held-under-a-long-graph-name": held_builder,
}
