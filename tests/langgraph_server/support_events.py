"""What the ``events`` stream tests share: graphs with a scripted chat model, a tool node, a subgraph and custom
events; a server over a task hub whose worker serves them (in this process, or as ``python support_events.py
ADDRESS TASKHUB``, a process a test may kill); the reference events of in-process LangGraph; and the
normalisation that makes the two comparable (run IDs, message IDs and checkpoint IDs renamed in order of
appearance)."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langchain_core.callbacks import dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.llms import LLM
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult, GenerationChunk
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, RetryPolicy, interrupt

from durabletask import worker as dt_worker
from durabletask.extensions.langgraph import heartbeat, register_graph
from durabletask.extensions.langgraph._server import runs, threads
from durabletask.extensions.langgraph._server.config import ProjectConfig, ServerSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.runs_body import server_metadata
from durabletask.extensions.langgraph._server.state import to_json
from tests.langgraph_server.support_hosting import application, hosted
from tests.langgraph_server.support_runs import RunsHub, Served


class ScriptedChatModel(BaseChatModel):
    """Answers the n-th model call of a conversation with its n-th reply, streamed word by word (tool calls last)."""

    replies: list[AIMessage]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        return self.replies[sum(1 for m in messages if m.type == "ai") % len(self.replies)]

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages)
        words = str(reply.content).split(" ")
        pieces = [AIMessageChunk(content=w if i == 0 else f" {w}", id=reply.id) for i, w in enumerate(words)]
        if reply.tool_calls:
            calls = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                for i, c in enumerate(reply.tool_calls)
            ]
            pieces.append(AIMessageChunk(content="", id=reply.id, tool_call_chunks=calls))  # type: ignore[arg-type]
        for piece in pieces:
            chunk = ChatGenerationChunk(message=piece)
            if run_manager is not None:
                run_manager.on_llm_new_token(str(piece.content), chunk=chunk)
            yield chunk


class ScriptedLLM(LLM):
    """A text model that answers ``text``, streamed word by word."""

    text: str

    @property
    def _llm_type(self) -> str:
        return "scripted-text"

    def _call(self, prompt: str, stop: Any = None, run_manager: Any = None, **kw: Any) -> str:
        return self.text

    def _stream(self, prompt: str, stop: Any = None, run_manager: Any = None, **kw: Any) -> Iterator[GenerationChunk]:
        for i, word in enumerate(self.text.split(" ")):
            chunk = GenerationChunk(text=word if i == 0 else f" {word}")
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


@tool
def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def _model() -> ScriptedChatModel:
    ask = AIMessage(
        content="let me look", id="reply-1", tool_calls=[{"name": "lookup", "args": {"city": "Paris"}, "id": "call-1"}]
    )
    return ScriptedChatModel(replies=[ask, AIMessage(content="it is sunny in Paris", id="reply-2")])


def _agent(state: MessagesState) -> dict[str, Any]:
    return {"messages": [_model().invoke(state["messages"])]}


def _route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "report"


def _mark(state: MessagesState) -> dict[str, Any]:
    dispatch_custom_event("progress", {"seen": len(state["messages"])})
    return {}


def agent_builder() -> StateGraph:
    """A model that calls a tool, the tool node, the model again, then a subgraph that sends a custom event."""
    inner = StateGraph(MessagesState)
    inner.add_node("mark", _mark)
    inner.add_edge(START, "mark")
    inner.add_edge("mark", END)
    builder = StateGraph(MessagesState)
    builder.add_node("agent", _agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_node("report", inner.compile())
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", _route, ["tools", "report"])
    builder.add_edge("tools", "agent")
    builder.add_edge("report", END)
    return builder


def _big(state: MessagesState) -> dict[str, Any]:
    size = int(str(state["messages"][-1].content))
    dispatch_custom_event("blob", {"text": "x" * size})
    return {}


def _flood(state: MessagesState) -> dict[str, Any]:
    for i in range(int(str(state["messages"][-1].content))):
        dispatch_custom_event("tick", {"i": i})
    return {}


def flood_builder() -> StateGraph:
    """A node that sends as many custom events as its input asks, as fast as it can."""
    builder = StateGraph(MessagesState)
    builder.add_node("flood", _flood)
    builder.add_edge(START, "flood")
    builder.add_edge("flood", END)
    return builder


def big_builder() -> StateGraph:
    """A node that sends a custom event as large as its input asks."""
    builder = StateGraph(MessagesState)
    builder.add_node("big", _big)
    builder.add_edge(START, "big")
    builder.add_edge("big", END)
    return builder


class _Opaque:
    """What no serializer writes: it refuses to be pickled or described."""

    def __reduce__(self) -> Any:
        raise TypeError("an _Opaque cannot be written")


def _odd(state: MessagesState) -> dict[str, Any]:
    dispatch_custom_event("opaque", {"handle": _Opaque(), "lock": threading.Lock()})
    loop: dict[str, Any] = {"n": 1}
    loop["self"] = loop
    dispatch_custom_event("cycle", loop)
    return {"messages": [AIMessage(content="after the event", id="odd-1")]}


def odd_builder() -> StateGraph:
    """A node whose custom event holds what cannot be serialized."""
    builder = StateGraph(MessagesState)
    builder.add_node("odd", _odd)
    builder.add_edge(START, "odd")
    builder.add_edge("odd", END)
    return builder


def _slow(state: MessagesState) -> dict[str, Any]:
    """Streams its tokens, then waits for the file its input names before it finishes (a test kills it there)."""
    flag = Path(str(state["messages"][-1].content))
    model = ScriptedChatModel(replies=[AIMessage(content="one two three", id="slow-1")])
    reply = model.invoke(state["messages"])
    while not flag.exists():
        time.sleep(0.05)
    return {"messages": [reply]}


def slow_builder() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("slow", _slow)
    builder.add_edge(START, "slow")
    builder.add_edge("slow", END)
    return builder


def _beat(state: MessagesState) -> dict[str, Any]:
    """Streams its tokens, then heartbeats until its run is cancelled (at most 120 s); writes ``{input}.cancelled``
    (whole) when it saw the cancel."""
    ScriptedChatModel(replies=[AIMessage(content="working on it", id="beat-1")]).invoke(state["messages"])
    seen = Path(f"{state['messages'][-1].content}.cancelled")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            heartbeat({"at": time.monotonic()})
        except Exception as stop:
            Path(f"{seen}.part").write_text(type(stop).__name__)
            Path(f"{seen}.part").replace(seen)
            raise
        time.sleep(0.02)
    return {}


def beat_builder() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("beat", _beat)
    builder.add_edge(START, "beat")
    builder.add_edge("beat", END)
    return builder


def slow_retried_builder() -> StateGraph:
    """``slow`` as in-process LangGraph retries it: its first attempt fails where a worker was killed (after the
    model's answer), its ``RetryPolicy`` runs it again."""
    attempts: list[int] = []

    def slow(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(replies=[AIMessage(content="one two three", id="slow-1")])
        reply = model.invoke(state["messages"])
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("the worker is gone")
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("slow", slow, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False))
    builder.add_edge(START, "slow")
    builder.add_edge("slow", END)
    return builder


class _Shelf(BaseRetriever):
    """A retriever that finds one document per word of the query."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [Document(page_content=word, metadata={"at": i}) for i, word in enumerate(query.split())]


@tool
def refuse(reason: str) -> str:
    """A tool that always fails."""
    raise ValueError(f"refused: {reason}")


@tool
def hide(reason: str) -> str:
    """A tool that fails with an error LangGraph's server does not describe."""
    raise ToolException(f"hidden: {reason}")


async def _research(state: MessagesState) -> dict[str, Any]:
    docs = await _Shelf().ainvoke("durable graph events")
    text = "".join([piece async for piece in ScriptedLLM(text="found three").astream("summarise")])
    return {"messages": [AIMessage(content=f"{text}: {len(docs)}", id="research-1")]}


def _attempt(state: MessagesState) -> dict[str, Any]:
    for failing in (refuse, hide):
        with suppress(ValueError, ToolException):
            failing.invoke({"reason": "no"})
    streamed = ScriptedChatModel(replies=[AIMessage(content="streamed by hand", id="attempt-2")])
    pieces = [str(piece.content) for piece in streamed.stream(state["messages"])]
    return {"messages": [AIMessage(content=f"tried, then {''.join(pieces)}", id="attempt-1")]}


def misc_builder() -> StateGraph:
    """An ``async`` node with a retriever and a streaming text model, then a node whose tool calls fail."""
    builder = StateGraph(MessagesState)
    builder.add_node("research", _research)
    builder.add_node("attempt", _attempt)
    builder.add_edge(START, "research")
    builder.add_edge("research", "attempt")
    builder.add_edge("attempt", END)
    return builder


def _plan(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content="plan made", id="plan-1")]}


def _ask(state: MessagesState) -> dict[str, Any]:
    answer = interrupt({"question": "go on?"})
    dispatch_custom_event("answered", {"answer": answer})
    return {"messages": [AIMessage(content=f"answer: {answer}", id="ask-1")]}


def _boom(state: MessagesState) -> dict[str, Any]:
    _model().invoke(state["messages"])
    raise ValueError("the node broke after its model answered")


def ask_builder() -> StateGraph:
    """A plan, then a question (an interrupt) whose answer a ``Command`` resumes with."""
    builder = StateGraph(MessagesState)
    builder.add_node("plan", _plan)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", END)
    return builder


def boom_builder() -> StateGraph:
    """A node that fails once its model has answered."""
    builder = StateGraph(MessagesState)
    builder.add_node("boom", _boom)
    builder.add_edge(START, "boom")
    builder.add_edge("boom", END)
    return builder


def fan_builder() -> StateGraph:
    """Two nodes of one superstep, each with two model calls; each waits for the other between its calls (when
    they run at once), so their events interleave."""
    between = threading.Barrier(2)

    def node(name: str) -> Any:
        def run(state: MessagesState) -> dict[str, Any]:
            first = ScriptedChatModel(replies=[AIMessage(content=f"{name} one two", id=f"{name}-1")])
            second = ScriptedChatModel(replies=[AIMessage(content=f"{name} three", id=f"{name}-2")])
            answer = first.invoke(state["messages"])
            with suppress(threading.BrokenBarrierError):
                between.wait(timeout=5)
            return {"messages": [answer, second.invoke(state["messages"])]}

        return run

    builder = StateGraph(MessagesState)
    builder.add_node("left", node("left"))
    builder.add_node("right", node("right"))
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge("left", END)
    builder.add_edge("right", END)
    return builder


BUILDERS = {
    "fan": fan_builder,
    "beat": beat_builder,
    "ask": ask_builder,
    "boom": boom_builder,
    "misc": misc_builder,
    "agent": agent_builder,
    "big": big_builder,
    "flood": flood_builder,
    "odd": odd_builder,
    "slow": slow_builder,
}


def graphs() -> dict[str, Any]:
    return {name: build().compile() for name, build in BUILDERS.items()}


def register(w: dt_worker.TaskHubGrpcWorker, compiled: dict[str, Any]) -> None:
    for name, graph in compiled.items():
        register_graph(w, name, graph)


@asynccontextmanager
async def serve(hub: RunsHub, *, start_worker: bool = True) -> AsyncIterator[Served]:
    """The thread and run routes on port 0 over ``hub`` serving these graphs, and (by default) a worker for them."""
    compiled = graphs()
    w = hub.worker()
    register(w, compiled)
    client = hub.async_client()
    settings = ServerSettings(project=ProjectConfig(path=Path(__file__).parent / "langgraph.json", graphs={}))
    ctx = ServerContext(client=client, graphs=compiled, settings=settings)
    async with hosted(application(ctx, threads, runs), ctx, w, start_worker=start_worker) as h:
        yield Served(h.url, ctx, h.sdk, h.http, compiled)


async def reference_events(
    graph_id: str,
    inputs: Any,
    run_id: str,
    thread_id: str,
    modes: Sequence[str] = (),
    *,
    subgraphs: bool = False,
    builder: Any = None,
    graph: Any = None,
) -> list[tuple[str, Any]]:
    """In-process LangGraph's ``astream_events`` v2 for the same run, as LangGraph's server streams it: the run's own
    ``on_chain_stream`` events carry its modes' chunks (sent as events of those of ``modes`` asked: ``values``,
    ``updates``, ``messages-tuple``; ``mode|ns`` for a subgraph's), every other event is an ``events`` event but for
    those tagged ``langsmith:hidden``; a run that fails ends with ``("error", its exception)``.

    The run's configurable is what a server gives its runs: the thread, graph, assistant and run IDs; its metadata
    has the server's keys. ``graph``
    (compiled with a checkpointer) continues a thread that earlier calls ran; ``inputs`` may be a ``Command``
    written as the server's ``command`` field."""
    if graph is None:
        graph = (builder or BUILDERS[graph_id])().compile(checkpointer=InMemorySaver())
    configurable = {"thread_id": thread_id, "graph_id": graph_id, "assistant_id": graph_id, "run_id": run_id}
    config: Any = {"run_id": uuid.UUID(run_id), "configurable": configurable, "metadata": server_metadata()}
    wanted = {"messages" if m == "messages-tuple" else m for m in modes}
    out: list[tuple[str, Any]] = []
    stream_mode = sorted({"debug", "values", *wanted})
    value = Command(**inputs["command"]) if isinstance(inputs, dict) and "command" in inputs else inputs
    try:
        async for event in graph.astream_events(
            value, config, version="v2", stream_mode=stream_mode, subgraphs=subgraphs
        ):
            if "langsmith:hidden" in (event.get("tags") or []):
                continue
            if event["event"] == "on_chain_stream" and event["run_id"] == run_id:
                ns, mode, chunk = event["data"]["chunk"] if subgraphs else ((), *event["data"]["chunk"])
                if mode in wanted:
                    out.append((f"{mode}|{'|'.join(ns)}" if ns else mode, to_json(chunk)))
                continue
            out.append(("events", to_json(_as_served(event))))
    except Exception as error:
        out.append(("error", error))
    return out


#: The exceptions whose message LangGraph's server writes (it writes any other as "An internal error occurred").
_DESCRIBED = (ValueError, TypeError, KeyError, AttributeError, RuntimeError, RecursionError, TimeoutError)


def _as_served(event: Any) -> Any:
    """An event whose data holds an exception, with the exception as LangGraph's server encodes one."""
    error = event["data"].get("error") if isinstance(event.get("data"), dict) else None
    if not isinstance(error, BaseException):
        return event
    message = str(error) if isinstance(error, _DESCRIBED) else "An internal error occurred"
    return {**event, "data": {**event["data"], "error": {"error": type(error).__name__, "message": message}}}


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalised(events: list[Any]) -> list[Any]:
    """``events`` with every UUID renamed ``id0``, ``id1``, ... in order of first appearance."""
    names: dict[str, str] = {}

    def rename(found: re.Match[str]) -> str:
        return names.setdefault(found.group(0), f"id{len(names)}")

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _ID.sub(rename, value)
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return [walk(e) for e in events]


def main() -> None:
    address, taskhub = sys.argv[1], sys.argv[2]
    w = dt_worker.TaskHubGrpcWorker(host_address=address, metadata=[("taskhub", taskhub)])
    register(w, graphs())
    w.start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
