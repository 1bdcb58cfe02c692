"""Parity corpus graphs that talk: tool-calling agents on a scripted chat model, subgraphs, interrupts, streams.

Each ``build_*`` takes the checkpointer (``None`` for the durable side) and counts its nodes in ``TALLY``.
"""

from __future__ import annotations

import asyncio
import operator
import warnings
from typing import Annotated, Any

from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition
from langgraph.types import Send, interrupt
from langgraph.warnings import LangGraphDeprecationWarning
from typing_extensions import TypedDict

from samples._langgraph_support import Reply, ScriptedChatModel, ToolCalls, Turn
from tests.support.langgraph_trace import TALLY


# Tool-calling agents -------------------------------------------------------------------------------
@tool
def price_of(item: str) -> str:
    """The price of an item in the shop."""
    TALLY.hit("tool.price_of")
    return f"a {item} costs {len(item) * 7} euros"


@tool
def stock_of(item: str) -> str:
    """How many of an item the shop has in stock."""
    TALLY.hit("tool.stock_of")
    return f"{len(item) * 3} of {item} in stock"


SHOP = (
    Turn(
        "lamp",
        (
            ToolCalls((("price_of", {"item": "lamp"}), ("stock_of", {"item": "lamp"}))),
            Reply("Here you go: {tool_result}"),
        ),
    ),
    Turn(
        "desk",
        (
            ToolCalls((("price_of", {"item": "desk"}),)),
            ToolCalls((("stock_of", {"item": "desk"}),)),
            Reply("Desk: {tool_result}"),
        ),
    ),
)


def _model(key: str, script: tuple[Turn, ...] = SHOP) -> ScriptedChatModel:
    return ScriptedChatModel(script=script, on_call=lambda turn, step: TALLY.hit(f"{key}.model"))


def build_tool_agent(checkpointer: Any = None) -> Any:
    tools = [price_of, stock_of]
    model = _model("tool_agent").bind_tools(tools)

    def agent(s: MessagesState) -> dict[str, Any]:
        TALLY.hit("tool_agent.agent")
        return {"messages": [model.invoke(s["messages"])]}

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", ToolNode(tools))
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", tools_condition)
    b.add_edge("tools", "agent")
    return b.compile(checkpointer=checkpointer)


def build_react_agent(checkpointer: Any = None) -> Any:
    with warnings.catch_warnings():
        # create_react_agent is deprecated in favour of langchain's create_agent, and still what many graphs use.
        warnings.simplefilter("ignore", LangGraphDeprecationWarning)
        return create_react_agent(_model("react"), [price_of, stock_of], checkpointer=checkpointer)


CHAT = (
    Turn("hello", (Reply("Hello! How can I help?"),)),
    Turn("remember", (Reply("You said hello first."),)),
)


def build_chat(checkpointer: Any = None) -> Any:
    model = _model("chat", CHAT)

    def reply(s: MessagesState) -> dict[str, Any]:
        TALLY.hit("chat.reply")
        return {"messages": [model.invoke(s["messages"])]}

    b = StateGraph(MessagesState)
    b.add_node("reply", reply)
    b.add_edge(START, "reply")
    b.add_edge("reply", END)
    return b.compile(checkpointer=checkpointer)


# Subgraphs -----------------------------------------------------------------------------------------
class Doc(TypedDict):
    text: str
    steps: Annotated[list[str], operator.add]


def _clean(s: Doc) -> dict[str, Any]:
    TALLY.hit("subgraph.clean")
    return {"text": " ".join(s["text"].split()), "steps": ["clean"]}


def _spell(s: Doc) -> dict[str, Any]:
    TALLY.hit("subgraph.spell")
    return {"text": s["text"].replace("teh", "the"), "steps": ["spell"]}


def _load(s: Doc) -> dict[str, Any]:
    TALLY.hit("subgraph.load")
    return {"steps": ["load"]}


def _publish(s: Doc) -> dict[str, Any]:
    TALLY.hit("subgraph.publish")
    return {"steps": [f"publish {len(s['text'])}"]}


def _inner_review() -> Any:
    b = StateGraph(Doc)
    b.add_node("clean", _clean)
    b.add_node("spell", _spell)
    b.add_edge(START, "clean")
    b.add_edge("clean", "spell")
    b.add_edge("spell", END)
    return b.compile()


def build_subgraph(checkpointer: Any = None) -> Any:
    b = StateGraph(Doc)
    b.add_node("load", _load)
    b.add_node("review", _inner_review())
    b.add_node("publish", _publish)
    b.add_edge(START, "load")
    b.add_edge("load", "review")
    b.add_edge("review", "publish")
    b.add_edge("publish", END)
    return b.compile(checkpointer=checkpointer)


class Words(TypedDict):
    words: list[str]
    count: int


def _count_words(s: Words) -> dict[str, Any]:
    TALLY.hit("subgraph_call.count")
    return {"count": len(s["words"])}


def build_subgraph_call(checkpointer: Any = None) -> Any:
    inner_builder = StateGraph(Words)
    inner_builder.add_node("count", _count_words)
    inner_builder.add_edge(START, "count")
    inner_builder.add_edge("count", END)
    inner = inner_builder.compile()

    def measure(s: Doc) -> dict[str, Any]:
        TALLY.hit("subgraph_call.measure")
        out = inner.invoke({"words": s["text"].split(), "count": 0})
        return {"steps": [f"words={out['count']}"]}

    b = StateGraph(Doc)
    b.add_node("measure", measure)
    b.add_edge(START, "measure")
    b.add_edge("measure", END)
    return b.compile(checkpointer=checkpointer)


def _confirm_inside(s: Doc) -> dict[str, Any]:
    TALLY.hit("subgraph_interrupt.confirm")
    answer = interrupt({"confirm": s["text"]})
    return {"steps": [f"confirmed: {answer}"]}


def build_subgraph_interrupt(checkpointer: Any = None) -> Any:
    inner = StateGraph(Doc)
    inner.add_node("clean", _clean)
    inner.add_node("confirm", _confirm_inside)
    inner.add_edge(START, "clean")
    inner.add_edge("clean", "confirm")
    inner.add_edge("confirm", END)
    b = StateGraph(Doc)
    b.add_node("load", _load)
    b.add_node("inner", inner.compile())
    b.add_edge(START, "load")
    b.add_edge("load", "inner")
    b.add_edge("inner", END)
    return b.compile(checkpointer=checkpointer)


# Interrupts ----------------------------------------------------------------------------------------
class Post(TypedDict):
    topic: str
    draft: str
    status: str


def _draft(s: Post) -> dict[str, Any]:
    TALLY.hit("approval.draft")
    return {"draft": f"All about {s['topic']}."}


def _ask_approval(s: Post) -> dict[str, Any]:
    TALLY.hit("approval.ask")
    decision = interrupt({"question": "publish this?", "draft": s["draft"]})
    return {"status": f"decision: {decision}"}


def _publish_post(s: Post) -> dict[str, Any]:
    TALLY.hit("approval.publish")
    return {"status": s["status"] + ", published"}


def build_approval(checkpointer: Any = None) -> Any:
    b = StateGraph(Post)
    b.add_node("draft", _draft)
    b.add_node("ask", _ask_approval)
    b.add_node("publish", _publish_post)
    b.add_edge(START, "draft")
    b.add_edge("draft", "ask")
    b.add_edge("ask", "publish")
    b.add_edge("publish", END)
    return b.compile(checkpointer=checkpointer)


class Survey(TypedDict):
    questions: list[str]
    answers: Annotated[list[str], operator.add]


def _ask_everyone(s: Survey) -> list[Send]:
    return [Send("ask", {"question": q}) for q in s["questions"]]


def _ask(item: dict[str, str]) -> dict[str, Any]:
    TALLY.hit("parallel_interrupts.ask")
    answer = interrupt({"question": item["question"]})
    return {"answers": [f"{item['question']} -> {answer}"]}


def build_parallel_interrupts(checkpointer: Any = None) -> Any:
    b = StateGraph(Survey)
    b.add_node("ask", _ask)
    b.add_conditional_edges(START, _ask_everyone, ["ask"])
    b.add_edge("ask", END)
    return b.compile(checkpointer=checkpointer)


class Signup(TypedDict):
    name: str
    age: int
    done: bool


def _interview(s: Signup) -> dict[str, Any]:
    TALLY.hit("two_interrupts.interview")
    name = interrupt("your name?")
    age = interrupt(f"{name}, your age?")
    return {"name": name, "age": age, "done": True}


def build_two_interrupts(checkpointer: Any = None) -> Any:
    b = StateGraph(Signup)
    b.add_node("interview", _interview)
    b.add_edge(START, "interview")
    b.add_edge("interview", END)
    return b.compile(checkpointer=checkpointer)


def _static_plan(s: Post) -> dict[str, Any]:
    TALLY.hit("static.plan")
    return {"draft": f"plan for {s['topic']}"}


def _static_act(s: Post) -> dict[str, Any]:
    TALLY.hit("static.act")
    return {"status": f"did {s['draft']}"}


def _static_graph(checkpointer: Any, **compile_kwargs: Any) -> Any:
    b = StateGraph(Post)
    b.add_node("plan", _static_plan)
    b.add_node("act", _static_act)
    b.add_edge(START, "plan")
    b.add_edge("plan", "act")
    b.add_edge("act", END)
    return b.compile(checkpointer=checkpointer, **compile_kwargs)


def build_interrupt_before(checkpointer: Any = None) -> Any:
    return _static_graph(checkpointer, interrupt_before=["act"])


def build_interrupt_after(checkpointer: Any = None) -> Any:
    return _static_graph(checkpointer, interrupt_after=["plan"])


# The Functional API ---------------------------------------------------------------------------------
@task
def _double(x: int) -> int:
    TALLY.hit("functional.double")
    return x * 2


def build_functional(checkpointer: Any = None) -> Any:
    @entrypoint(checkpointer=checkpointer)
    def doubled_sum(xs: list[int]) -> dict[str, Any]:
        TALLY.hit("functional.entrypoint")
        futures = [_double(x) for x in xs]
        return {"sum": sum(f.result() for f in futures), "count": len(xs)}

    return doubled_sum


def build_functional_interrupt(checkpointer: Any = None) -> Any:
    @entrypoint(checkpointer=checkpointer)
    def doubled_then_approved(xs: list[int]) -> dict[str, Any]:
        TALLY.hit("functional_interrupt.entrypoint")
        total = sum(f.result() for f in [_double(x) for x in xs])
        verdict = interrupt({"approve total": total})
        return {"sum": total, "verdict": verdict}

    return doubled_then_approved


# async def nodes (plain LangGraph runs them only under ainvoke / astream) -------------------------------
async def _fetch(s: Doc) -> dict[str, Any]:
    TALLY.hit("async.fetch")
    await asyncio.sleep(0)
    return {"text": s["text"] + " fetched", "steps": ["fetch"]}


async def _summarise(s: Doc) -> dict[str, Any]:
    TALLY.hit("async.summarise")
    await asyncio.sleep(0)
    return {"steps": [f"summary of {len(s['text'].split())} words"]}


def build_async_nodes(checkpointer: Any = None) -> Any:
    b = StateGraph(Doc)
    b.add_node("fetch", _fetch)
    b.add_node("summarise", _summarise)
    b.add_edge(START, "fetch")
    b.add_edge("fetch", "summarise")
    b.add_edge("summarise", END)
    return b.compile(checkpointer=checkpointer)


# Streaming from inside nodes -----------------------------------------------------------------------
class Progress(TypedDict):
    size: int
    done: Annotated[list[int], operator.add]


def _crunch(s: Progress) -> dict[str, Any]:
    TALLY.hit("custom.crunch")
    write = get_stream_writer()
    for i in range(s["size"]):
        write({"progress": i + 1, "of": s["size"]})
    return {"done": list(range(s["size"]))}


def _report(s: Progress) -> dict[str, Any]:
    TALLY.hit("custom.report")
    get_stream_writer()({"report": len(s["done"])})
    return {"done": [-1]}


def build_custom_stream(checkpointer: Any = None) -> Any:
    b = StateGraph(Progress)
    b.add_node("crunch", _crunch)
    b.add_node("report", _report)
    b.add_edge(START, "crunch")
    b.add_edge("crunch", "report")
    b.add_edge("report", END)
    return b.compile(checkpointer=checkpointer)
