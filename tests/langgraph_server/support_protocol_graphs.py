"""Graphs the protocol's tests serve: a chat that streams a model's answer then asks for approval, and a slow one.

The model is scripted (its answer depends on nothing but its input), so any worker, on any attempt, says the same.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

from durabletask.extensions.langgraph import heartbeat

ANSWER = "Hello, durable world!"


class ScriptedModel(BaseChatModel):
    """Streams :data:`ANSWER` word by word; the last chunk says it is the last."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=ANSWER, id="answer-1"))])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        words = ANSWER.split(" ")
        for i, word in enumerate(words):
            chunk = AIMessageChunk(content=word if i == 0 else " " + word, id="answer-1")
            if i == len(words) - 1:
                chunk.chunk_position = "last"
            yield ChatGenerationChunk(message=chunk)


class State(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]
    steps: Annotated[list[str], operator.add]
    answer: str


def talk(state: State) -> dict[str, Any]:
    writer = get_stream_writer()
    writer({"name": "progress", "step": "talk"})
    reply = ScriptedModel().invoke(state.get("messages") or [])
    return {"messages": [reply], "steps": ["talk"]}


def ask(state: State) -> dict[str, Any]:
    get_stream_writer()({"name": "progress", "step": "ask"})
    answer = interrupt({"question": "approve?"})
    return {"answer": str(answer), "steps": ["ask"]}


def _chat() -> Any:
    builder = StateGraph(State)
    builder.add_node("talk", talk)
    builder.add_node("ask", ask)
    builder.add_edge(START, "talk")
    builder.add_edge("talk", "ask")
    builder.add_edge("ask", END)
    return builder.compile()


def crawl(state: State) -> dict[str, Any]:
    """A long node: a step of progress every 0.2 s for six seconds, unless its run is cancelled."""
    writer = get_stream_writer()
    for step in range(30):
        heartbeat()  # stops the node once its run is cancelled
        writer({"name": "progress", "step": step})
        time.sleep(0.2)
    return {"steps": ["crawled"]}


def _slow() -> Any:
    builder = StateGraph(State)
    builder.add_node("crawl", crawl)
    builder.add_edge(START, "crawl")
    builder.add_edge("crawl", END)
    return builder.compile()


chat = _chat()
slow = _slow()
