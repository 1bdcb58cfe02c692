"""A support agent served by ``durabletask langgraph dev``: a scripted model, a refund that needs approval, a report.

The model is scripted (no network, no key) and streams its answer word by word, so the client sees tokens arrive
in ``messages`` mode. Its reply is derived from the conversation alone, never from a counter in the process, so a
retried node on another worker answers the same.

- "policy" in the user's message: the model answers from the script.
- "refund order N": the model asks for the ``refund`` tool; ``approve`` waits for a person (``interrupt()``), who
  resumes the run with ``"approve"`` or ``"reject"``; then ``refund`` runs (or not) and the model reports it.
- "report": ``write_report`` works through many sections, a custom event per section, long enough to be cancelled;
  it heartbeats, so a cancelled run stops it at its next section.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

from durabletask.extensions.langgraph import heartbeat

POLICY = "Refunds are accepted within 30 days of delivery, and each one is approved by a person."
REPORT_SECTIONS = 600  # far more than a cancelled run reaches
SECTION_SECONDS = 0.2


class State(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]
    sections: int


class ScriptedModel(BaseChatModel):
    """A chat model whose reply is a function of the conversation; it streams the reply word by word."""

    @property
    def _llm_type(self) -> str:
        return "scripted-support"

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        user = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        asked = str(user.content).lower()
        turn = sum(isinstance(m, HumanMessage) for m in messages)
        tool = next((m for m in reversed(messages) if isinstance(m, ToolMessage)), None)
        order = re.search(r"refund order (\d+)", asked)
        if order and (tool is None or messages.index(tool) < messages.index(user)):
            call = {
                "name": "refund",
                "args": {"order": int(order.group(1))},
                "id": f"refund-{turn}",
                "type": "tool_call",
            }
            return AIMessage(content="", tool_calls=[call], id=f"ai-{turn}-call")
        if tool is not None and messages.index(tool) > messages.index(user):
            return AIMessage(content=f"Done: {tool.content}", id=f"ai-{turn}-done")
        if "policy" in asked:
            return AIMessage(content=POLICY, id=f"ai-{turn}-policy")
        return AIMessage(
            content="I can explain the refund policy, refund an order, or write a report.", id=f"ai-{turn}"
        )

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages)
        words = str(reply.content).split(" ") if reply.content else [""]
        for i, word in enumerate(words):
            last = i == len(words) - 1
            chunk = AIMessageChunk(
                content=word if i == 0 else " " + word,
                id=reply.id,
                tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": k}
                    for k, c in enumerate(reply.tool_calls)
                ]
                if last
                else [],
            )
            yield ChatGenerationChunk(message=chunk)
            time.sleep(0.01)


model = ScriptedModel()


def agent(state: State) -> dict[str, Any]:
    if "report" in str(state["messages"][-1].content).lower():
        return {}
    return {"messages": [model.invoke(state["messages"])]}


def approve(state: State) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]  # type: ignore[attr-defined]
    decision = interrupt({"question": "Approve this refund?", "order": call["args"]["order"]})
    if decision == "approve":
        outcome = f"order {call['args']['order']} refunded"
    else:
        outcome = f"refund of order {call['args']['order']} declined by the approver"
    return {"messages": [ToolMessage(content=outcome, tool_call_id=call["id"], name="refund")]}


def write_report(state: State) -> dict[str, Any]:
    write = get_stream_writer()
    for section in range(1, REPORT_SECTIONS + 1):
        heartbeat({"section": section})  # raises once the run is cancelled: the node stops here
        write({"section": section})
        time.sleep(SECTION_SECONDS)
    return {"sections": REPORT_SECTIONS, "messages": [AIMessage(content="The report is written.")]}


def route(state: State) -> str:
    last = state["messages"][-1]
    if isinstance(last, HumanMessage) and "report" in str(last.content).lower():
        return "write_report"
    if isinstance(last, AIMessage) and last.tool_calls:
        return "approve"
    return END


builder = StateGraph(State)
builder.add_node("agent", agent)
builder.add_node("approve", approve)
builder.add_node("write_report", write_report)
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", route, ["approve", "write_report", END])
builder.add_edge("approve", "agent")
builder.add_edge("write_report", END)
graph = builder.compile()
