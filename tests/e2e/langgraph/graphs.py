"""Small graphs the LangGraph tests run both in plain LangGraph and durably, with call counters."""

from __future__ import annotations

import operator
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, RetryPolicy, Send, interrupt

from durabletask.extensions.langgraph import idempotency_key

CALLS: Counter[str] = Counter()
KEYS: list[str] = []


class Items(TypedDict):
    x: int
    items: Annotated[list[Any], operator.add]


def linear() -> StateGraph[Any]:
    b = StateGraph(Items)
    b.add_node("a", lambda s: {"x": s["x"] + 1, "items": ["a"]})
    b.add_node("b", lambda s: {"x": s["x"] * 2, "items": ["b"]})
    b.add_node("c", lambda s: {"items": [f"c{s['x']}"]})
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", END)
    return b


def cycle() -> StateGraph[Any]:
    b = StateGraph(Items)
    b.add_node("inc", lambda s: {"x": s["x"] + 1, "items": [s["x"]]})
    b.add_edge(START, "inc")
    b.add_conditional_edges("inc", lambda s: "inc" if s["x"] < 5 else END)
    return b


def fan_out() -> StateGraph[Any]:
    b = StateGraph(Items)
    b.add_node("plan", lambda s: {"x": s["x"]})
    b.add_node("work", lambda s: {"items": [s["x"] * 10]})
    b.add_node("join", lambda s: {"x": sum(i for i in s["items"] if isinstance(i, int))})
    b.add_edge(START, "plan")
    b.add_conditional_edges("plan", lambda s: [Send("work", {"x": i, "items": []}) for i in range(s["x"])], ["work"])
    b.add_edge("work", "join")
    b.add_edge("join", END)
    return b


def command_goto() -> StateGraph[Any]:
    def route(s: Items) -> Command[Any]:
        return Command(goto="right" if s["x"] % 2 else "left", update={"items": ["routed"]})

    b = StateGraph(Items)
    b.add_node("route", route, destinations=("left", "right"))
    b.add_node("left", lambda s: {"items": ["left"]})
    b.add_node("right", lambda s: {"items": ["right"]})
    b.add_edge(START, "route")
    return b


def approvals() -> StateGraph[Any]:
    """Two Send branches that each ask a question, then a join."""

    def ask(s: Items) -> dict[str, Any]:
        CALLS[f"ask{s['x']}"] += 1
        answer = interrupt(f"approve {s['x']}?")
        return {"items": [f"{s['x']}:{answer}"]}

    b = StateGraph(Items)
    b.add_node("plan", lambda s: {"items": ["plan"]})
    b.add_node("ask", ask)
    b.add_node("done", lambda s: {"items": ["done"]})
    b.add_edge(START, "plan")
    b.add_conditional_edges("plan", lambda s: [Send("ask", {"x": i, "items": []}) for i in (1, 2)], ["ask"])
    b.add_edge("ask", "done")
    b.add_edge("done", END)
    return b


def failing() -> StateGraph[Any]:
    def boom(s: Items) -> dict[str, Any]:
        raise ValueError(f"bad x {s['x']}")

    b = StateGraph(Items)
    b.add_node("ok", lambda s: {"items": ["ok"]})
    b.add_node("boom", boom)
    b.add_edge(START, "ok")
    b.add_edge("ok", "boom")
    return b


class Flaky(Exception):
    pass


def retrying(fail_times: int, retry_on: Any = Flaky) -> StateGraph[Any]:
    def flaky(s: Items) -> dict[str, Any]:
        CALLS["flaky"] += 1
        KEYS.append(idempotency_key())
        if CALLS["flaky"] <= fail_times:
            raise Flaky(f"attempt {CALLS['flaky']}")
        return {"items": [f"ok after {CALLS['flaky']}"]}

    b = StateGraph(Items)
    b.add_node("flaky", flaky, retry_policy=RetryPolicy(initial_interval=0.01, max_attempts=3, retry_on=retry_on))
    b.add_edge(START, "flaky")
    return b


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def chat() -> StateGraph[Any]:
    def bot(s: Chat) -> dict[str, Any]:
        return {"messages": [AIMessage(f"echo {len(s['messages'])}: {s['messages'][-1].content}")]}

    b = StateGraph(Chat)
    b.add_node("bot", bot)
    b.add_edge(START, "bot")
    return b


@dataclass
class DataState:
    n: int = 0
    log: Annotated[list[str], operator.add] = field(default_factory=list)


def dataclass_state() -> StateGraph[Any]:
    b = StateGraph(DataState)
    b.add_node("one", lambda s: {"n": s.n + 1, "log": ["one"]})
    b.add_node("two", lambda s: {"n": s.n * 3, "log": ["two"]})
    b.add_edge(START, "one")
    b.add_edge("one", "two")
    return b


def custom_stream() -> StateGraph[Any]:
    from langgraph.config import get_stream_writer

    def talk(s: Items) -> dict[str, Any]:
        write = get_stream_writer()
        write({"progress": 1})
        write({"progress": 2})
        return {"items": ["talked"]}

    b = StateGraph(Items)
    b.add_node("talk", talk)
    b.add_edge(START, "talk")
    return b


def without_message_ids(value: Any) -> Any:
    """``value`` with every message's ``id`` cleared (ids are random in plain LangGraph)."""
    if isinstance(value, dict):
        return {k: without_message_ids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_message_ids(v) for v in value]
    if hasattr(value, "model_copy") and hasattr(value, "id"):
        return value.model_copy(update={"id": None})
    return value


def with_error_handler() -> StateGraph[Any]:
    from langgraph.errors import NodeError

    def boom(s: Items) -> dict[str, Any]:
        raise KeyError("missing")

    def recover(s: Items, error: NodeError) -> Command[Any]:
        return Command(
            update={"items": [f"recovered from {error.node}: {type(error.error).__name__} {error.error}"]}, goto="after"
        )

    b = StateGraph(Items)
    b.add_node("boom", boom, error_handler=recover)
    b.add_node("after", lambda s: {"items": ["after"]})
    b.add_edge(START, "boom")
    return b


def pinned(where: str) -> StateGraph[Any]:
    """``cpu`` then ``gpu``; each node records the worker (``where``) whose copy of the graph ran it."""

    def gpu(s: Items) -> dict[str, Any]:
        CALLS[f"gpu@{where}"] += 1
        return {"items": ["gpu"]}

    def cpu(s: Items) -> dict[str, Any]:
        CALLS[f"cpu@{where}"] += 1
        return {"items": ["cpu"]}

    b = StateGraph(Items)
    b.add_node("cpu", cpu)
    b.add_node("gpu", gpu)
    b.add_edge(START, "cpu")
    b.add_edge("cpu", "gpu")
    return b


def with_subgraph() -> StateGraph[Any]:
    inner = StateGraph(Items)
    inner.add_node("i1", lambda s: {"items": ["i1"], "x": s["x"] + 10})
    inner.add_node("i2", lambda s: {"items": ["i2"]})
    inner.add_edge(START, "i1")
    inner.add_edge("i1", "i2")
    b = StateGraph(Items)
    b.add_node("before", lambda s: {"items": ["before"]})
    b.add_node("sub", inner.compile())
    b.add_node("after", lambda s: {"items": [f"after {s['x']}"]})
    b.add_edge(START, "before")
    b.add_edge("before", "sub")
    b.add_edge("sub", "after")
    return b


def streaming_model() -> StateGraph[Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    def talk(s: Chat) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([AIMessage("hello there friend")]))
        return {"messages": [model.invoke(s["messages"])]}

    b = StateGraph(Chat)
    b.add_node("talk", talk)
    b.add_edge(START, "talk")
    return b


def react_agent() -> Any:
    """``create_react_agent`` with a scripted model: one tool call, then an answer."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        CALLS["weather"] += 1
        return f"sunny in {city}"

    script = [
        AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "call-1"}]),
        AIMessage("It is sunny in Oslo."),
    ]
    with warnings.catch_warnings():  # LangGraph 1.x points to langchain.agents, but still ships this one
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(Scripted(responses=script), [weather])


def gated(gate: Any, started: Any = None) -> StateGraph[Any]:
    """``first`` then ``second``, which sets ``started``, waits (at most a minute) for ``gate`` and records
    whether it opened."""

    def second(s: Items) -> dict[str, Any]:
        if started is not None:
            started.set()
        CALLS["opened" if gate.wait(60) else "timed out"] += 1
        return {"items": ["second"]}

    b = StateGraph(Items)
    b.add_node("first", lambda s: {"items": ["first"]})
    b.add_node("second", second)
    b.add_edge(START, "first")
    b.add_edge("first", "second")
    return b


def interrupted_subgraph() -> StateGraph[Any]:
    """A subgraph node whose second node asks a question; its first node counts its runs."""

    def prepare(s: Items) -> dict[str, Any]:
        CALLS["prepare"] += 1
        return {"items": ["prepared"]}

    inner = StateGraph(Items)
    inner.add_node("prepare", prepare)
    inner.add_node("ask", lambda s: {"items": [f"answer {interrupt('sub?')}"]})
    inner.add_edge(START, "prepare")
    inner.add_edge("prepare", "ask")
    b = StateGraph(Items)
    b.add_node("sub", inner.compile())
    b.add_node("after", lambda s: {"items": ["after"]})
    b.add_edge(START, "sub")
    b.add_edge("sub", "after")
    return b


@dataclass
class UserContext:
    user: str


def configured() -> StateGraph[Any]:
    """A node reading the run's configurable keys and its runtime context."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.runtime import Runtime

    def read(s: Items, config: RunnableConfig, runtime: Runtime[UserContext]) -> dict[str, Any]:
        return {"items": [config["configurable"].get("tenant"), runtime.context.user if runtime.context else None]}

    b = StateGraph(Items, context_schema=UserContext)
    b.add_node("read", read)
    b.add_edge(START, "read")
    return b


def functional(checkpointer: Any = None) -> Any:
    """A functional-API workflow: two ``@task`` calls and an approval through ``interrupt()``."""
    from langgraph.func import entrypoint, task

    @task
    def draft(topic: str) -> str:
        CALLS["draft"] += 1
        return f"essay on {topic}"

    @task
    def polish(text: str) -> str:
        return text.upper()

    @entrypoint(checkpointer=checkpointer)
    def workflow(topic: str) -> dict[str, Any]:
        text = polish(draft(topic).result()).result()
        verdict = interrupt({"review": text})
        return {"text": text, "verdict": verdict}

    return workflow


def fails_once() -> StateGraph[Any]:
    """``ok`` then ``flaky``, whose first run (per process-wide counter and graph) raises."""

    def flaky(s: Items) -> dict[str, Any]:
        CALLS[f"flaky-{id(b)}"] += 1
        if CALLS[f"flaky-{id(b)}"] == 1:
            raise RuntimeError("first try")
        return {"items": ["flaky ok"]}

    b = StateGraph(Items)
    b.add_node("ok", lambda s: {"items": ["ok"]})
    b.add_node("flaky", flaky)
    b.add_edge(START, "ok")
    b.add_edge("ok", "flaky")
    return b


def _extend(state: Any, writes: Any) -> list[Any]:
    out = list(state or [])
    for write in writes:
        out.extend(write)
    return out


class DeltaLog(TypedDict):
    log: Annotated[list[Any], DeltaChannel(_extend)]
    n: int


def delta_channel() -> StateGraph[Any]:
    """A state whose log is a ``DeltaChannel`` (stored as writes, rebuilt from the checkpoints' history)."""
    b = StateGraph(DeltaLog)
    b.add_node("a", lambda s: {"log": ["a"], "n": len(s["log"])})
    b.add_node("b", lambda s: {"log": [f"b{len(s['log'])}"]})
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    return b


def async_nodes() -> StateGraph[Any]:
    """``async def`` nodes (plain LangGraph runs them with ``ainvoke`` only)."""
    import asyncio

    async def fetch(s: Items) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"x": s["x"] + 1, "items": ["fetched"]}

    b = StateGraph(Items)
    b.add_node("fetch", fetch)
    b.add_node("sync", lambda s: {"items": [f"sync {s['x']}"]})
    b.add_edge(START, "fetch")
    b.add_edge("fetch", "sync")
    return b


def remembering() -> StateGraph[Any]:
    """A node that reads and writes LangGraph's ``Store`` (the one the graph was compiled with)."""
    from langgraph.store.base import BaseStore

    def note(s: Items, *, store: BaseStore) -> dict[str, Any]:
        seen = store.get(("notes",), "count")
        count = (seen.value["n"] if seen else 0) + 1
        store.put(("notes",), "count", {"n": count})
        return {"items": [count]}

    b = StateGraph(Items)
    b.add_node("note", note)
    b.add_edge(START, "note")
    return b


def timed_out() -> StateGraph[Any]:
    """An ``async def`` node with a run timeout that waits for something that never comes."""
    import asyncio

    async def stuck(s: Items) -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"items": ["never"]}

    b = StateGraph(Items)
    b.add_node("stuck", stuck, timeout=0.2)
    b.add_edge(START, "stuck")
    return b


def cached_node() -> StateGraph[Any]:
    """A node with a ``CachePolicy``: the same input runs it once while the cache holds its writes."""
    from langgraph.types import CachePolicy

    def expensive(s: Items) -> dict[str, Any]:
        CALLS[f"expensive-{id(b)}"] += 1
        return {"items": [s["x"] * 100]}

    b = StateGraph(Items)
    b.add_node("expensive", expensive, cache_policy=CachePolicy())
    b.add_edge(START, "expensive")
    return b
