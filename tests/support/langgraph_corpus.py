"""The LangGraph parity corpus: small graphs with their inputs, resume commands and stream modes.

Each :class:`~tests.support.langgraph_trace.Case` builds its graph with ``build(checkpointer)``: with ``None``
(what ``register_graph`` and ``DurableGraph`` take) or with an ``InMemorySaver`` (plain LangGraph, the
reference). Nodes count their executions in ``TALLY`` (this process), so a run can check that each node ran as
often as under LangGraph. ``tests/support/langgraph_trace.py`` runs a case through either side and normalises
what it saw; ``langgraph_corpus_interactive.py`` holds the agents, subgraphs, interrupts and streams.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.channels import DeltaChannel
from langgraph.errors import NodeError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.managed import RemainingSteps
from langgraph.types import Command, RetryPolicy, Send
from pydantic import BaseModel, field_validator
from typing_extensions import TypedDict

from tests.support import langgraph_corpus_interactive as talk
from tests.support.langgraph_trace import TALLY, Case, FromInterrupts


# Linear, cycles, routing ---------------------------------------------------------------------------
class Text(TypedDict):
    text: str
    trail: Annotated[list[str], operator.add]


def _upper(s: Text) -> dict[str, Any]:
    TALLY.hit("linear.upper")
    return {"text": s["text"].upper(), "trail": ["upper"]}


def _exclaim(s: Text) -> dict[str, Any]:
    TALLY.hit("linear.exclaim")
    return {"text": s["text"] + "!", "trail": ["exclaim"]}


def _measure(s: Text) -> dict[str, Any]:
    TALLY.hit("linear.measure")
    return {"trail": [f"len={len(s['text'])}"]}


def build_linear(checkpointer: Any = None) -> Any:
    b = StateGraph(Text)
    b.add_node("upper", _upper)
    b.add_node("exclaim", _exclaim)
    b.add_node("measure", _measure)
    b.add_edge(START, "upper")
    b.add_edge("upper", "exclaim")
    b.add_edge("exclaim", "measure")
    b.add_edge("measure", END)
    return b.compile(checkpointer=checkpointer)


class Counting(TypedDict):
    n: int
    seen: Annotated[list[int], operator.add]


def _increment(s: Counting) -> dict[str, Any]:
    TALLY.hit("loop.increment")
    return {"n": s["n"] + 1, "seen": [s["n"]]}


def _again_or_end(s: Counting) -> str:
    return "increment" if s["n"] < 5 else END


def build_loop(checkpointer: Any = None) -> Any:
    b = StateGraph(Counting)
    b.add_node("increment", _increment)
    b.add_edge(START, "increment")
    b.add_conditional_edges("increment", _again_or_end, ["increment", END])
    return b.compile(checkpointer=checkpointer)


def _forever(s: Counting) -> dict[str, Any]:
    TALLY.hit("recursion.forever")
    return {"n": s["n"] + 1}


def build_recursion(checkpointer: Any = None) -> Any:
    b = StateGraph(Counting)
    b.add_node("forever", _forever)
    b.add_edge(START, "forever")
    b.add_edge("forever", "forever")
    return b.compile(checkpointer=checkpointer)


class Budget(TypedDict):
    n: int
    remaining_steps: RemainingSteps


def _spend(s: Budget) -> dict[str, Any]:
    TALLY.hit("remaining.spend")
    return {"n": s["n"] + s["remaining_steps"]}


def _spend_while_steps_remain(s: Budget) -> str:
    return "spend" if s["remaining_steps"] > 3 else END


def build_remaining_steps(checkpointer: Any = None) -> Any:
    b = StateGraph(Budget)
    b.add_node("spend", _spend)
    b.add_edge(START, "spend")
    b.add_conditional_edges("spend", _spend_while_steps_remain, ["spend", END])
    return b.compile(checkpointer=checkpointer)


def _extend(current: list[str] | None, writes: Sequence[list[str]]) -> list[str]:
    merged = list(current or [])
    for written in writes:
        merged.extend(written)
    return merged


class Journal(TypedDict):
    n: int
    # Stored as writes, rebuilt from the checkpoints' history; a snapshot every 3 steps.
    log: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=3)]


def _note(s: Journal) -> dict[str, Any]:
    TALLY.hit("delta.note")
    return {"n": s["n"] + 1, "log": [f"note {s['n']} after {len(s['log'])}"]}


def _note_again_or_end(s: Journal) -> str:
    return "note" if s["n"] % 4 else END


def build_delta_channel(checkpointer: Any = None) -> Any:
    b = StateGraph(Journal)
    b.add_node("note", _note)
    b.add_edge(START, "note")
    b.add_conditional_edges("note", _note_again_or_end, ["note", END])
    return b.compile(checkpointer=checkpointer)


class Parcel(TypedDict):
    weight: int
    route: str


def _weigh(s: Parcel) -> dict[str, Any]:
    TALLY.hit("router.weigh")
    return {"route": "weighed"}


def _by_weight(s: Parcel) -> str:
    return "heavy" if s["weight"] > 10 else "light"


def _freight(s: Parcel) -> dict[str, Any]:
    TALLY.hit("router.freight")
    return {"route": "freight"}


def _post(s: Parcel) -> dict[str, Any]:
    TALLY.hit("router.post")
    return {"route": "post"}


def build_router(checkpointer: Any = None) -> Any:
    b = StateGraph(Parcel)
    b.add_node("weigh", _weigh)
    b.add_node("freight", _freight)
    b.add_node("post", _post)
    b.add_edge(START, "weigh")
    b.add_conditional_edges("weigh", _by_weight, {"heavy": "freight", "light": "post"})
    b.add_edge("freight", END)
    b.add_edge("post", END)
    return b.compile(checkpointer=checkpointer)


# Parallel branches, Send, Command ------------------------------------------------------------------
class Votes(TypedDict):
    topic: str
    votes: Annotated[list[str], operator.add]
    verdict: str


def _voter(name: str) -> Callable[[Votes], dict[str, Any]]:
    def vote(s: Votes) -> dict[str, Any]:
        TALLY.hit(f"branches.{name}")
        return {"votes": [f"{name}:{len(s['topic']) % 3}"]}

    vote.__name__ = f"vote_{name}"
    return vote


def _count_votes(s: Votes) -> dict[str, Any]:
    TALLY.hit("branches.tally")
    return {"verdict": ",".join(sorted(s["votes"]))}


def build_branches(checkpointer: Any = None) -> Any:
    b = StateGraph(Votes)
    for name in ("alice", "bob", "carol"):
        b.add_node(name, _voter(name))
        b.add_edge(START, name)
    b.add_node("tally", _count_votes)
    b.add_edge(["alice", "bob", "carol"], "tally")
    b.add_edge("tally", END)
    return b.compile(checkpointer=checkpointer)


class Numbers(TypedDict):
    xs: list[int]
    squares: Annotated[list[int], operator.add]
    total: int


def _scatter(s: Numbers) -> list[Send]:
    return [Send("square", {"x": x}) for x in s["xs"]]


def _square(item: dict[str, int]) -> dict[str, Any]:
    TALLY.hit("send.square")
    return {"squares": [item["x"] * item["x"]]}


def _sum(s: Numbers) -> dict[str, Any]:
    TALLY.hit("send.sum")
    return {"total": sum(s["squares"])}


def build_send(checkpointer: Any = None) -> Any:
    b = StateGraph(Numbers)
    b.add_node("square", _square)
    b.add_node("sum", _sum)
    b.add_conditional_edges(START, _scatter, ["square"])
    b.add_edge("square", "sum")
    b.add_edge("sum", END)
    return b.compile(checkpointer=checkpointer)


class Claim(TypedDict):
    amount: int
    status: str
    log: Annotated[list[str], operator.add]


def _decide(s: Claim) -> Command[Literal["approve", "reject"]]:
    TALLY.hit("command.decide")
    target = "approve" if s["amount"] <= 100 else "reject"
    return Command(goto=target, update={"log": [f"decided {target}"]})


def _approve(s: Claim) -> dict[str, Any]:
    TALLY.hit("command.approve")
    return {"status": "approved", "log": ["approved"]}


def _reject(s: Claim) -> dict[str, Any]:
    TALLY.hit("command.reject")
    return {"status": "rejected", "log": ["rejected"]}


def build_command(checkpointer: Any = None) -> Any:
    b = StateGraph(Claim)
    b.add_node("decide", _decide, destinations=("approve", "reject"))
    b.add_node("approve", _approve)
    b.add_node("reject", _reject)
    b.add_edge(START, "decide")
    b.add_edge("approve", END)
    b.add_edge("reject", END)
    return b.compile(checkpointer=checkpointer)


# Reducers and state schemas ------------------------------------------------------------------------
def _greet(s: MessagesState) -> dict[str, Any]:
    TALLY.hit("messages.greet")
    return {"messages": [AIMessage(content=f"hello, {s['messages'][-1].content}")]}


def _revise(s: MessagesState) -> dict[str, Any]:
    TALLY.hit("messages.revise")
    # add_messages replaces a message that has the same ID and removes one named by RemoveMessage.
    return {"messages": [HumanMessage(content="edited", id="first"), RemoveMessage(id="second")]}


def build_messages(checkpointer: Any = None) -> Any:
    b = StateGraph(MessagesState)
    b.add_node("greet", _greet)
    b.add_node("revise", _revise)
    b.add_edge(START, "greet")
    b.add_edge("greet", "revise")
    b.add_edge("revise", END)
    return b.compile(checkpointer=checkpointer)


@dataclass
class Order:
    item: str
    qty: int = 1
    notes: Annotated[list[str], operator.add] = field(default_factory=list)


def _price(s: Order) -> dict[str, Any]:
    TALLY.hit("dataclass.price")
    return {"notes": [f"{s.qty} x {s.item}"], "qty": s.qty * 2}


def _confirm(s: Order) -> dict[str, Any]:
    TALLY.hit("dataclass.confirm")
    return {"notes": [f"confirmed {s.qty}"]}


def build_dataclass(checkpointer: Any = None) -> Any:
    b = StateGraph(Order)
    b.add_node("price", _price)
    b.add_node("confirm", _confirm)
    b.add_edge(START, "price")
    b.add_edge("price", "confirm")
    b.add_edge("confirm", END)
    return b.compile(checkpointer=checkpointer)


class Profile(BaseModel):
    name: str
    age: int = 0
    tags: Annotated[list[str], operator.add] = []

    @field_validator("name")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()


def _tag(s: Profile) -> dict[str, Any]:
    TALLY.hit("pydantic.tag")
    return {"tags": ["adult" if s.age >= 18 else "minor"], "name": s.name.title()}


def _birthday(s: Profile) -> dict[str, Any]:
    TALLY.hit("pydantic.birthday")
    return {"age": s.age + 1, "tags": [f"{s.name} turned {s.age + 1}"]}


def build_pydantic(checkpointer: Any = None) -> Any:
    b = StateGraph(Profile)
    b.add_node("tag", _tag)
    b.add_node("birthday", _birthday)
    b.add_edge(START, "tag")
    b.add_edge("tag", "birthday")
    b.add_edge("birthday", END)
    return b.compile(checkpointer=checkpointer)


# Retries and failures ------------------------------------------------------------------------------
class Job(TypedDict):
    job: str
    result: str


def _flaky(s: Job) -> dict[str, Any]:
    attempt = TALLY.hit("retry.flaky")
    if attempt < 3:
        raise ConnectionError(f"attempt {attempt}: the service did not answer")
    return {"result": f"{s['job']} done on attempt {attempt}"}


def build_retry(checkpointer: Any = None) -> Any:
    b = StateGraph(Job)
    policy = RetryPolicy(
        max_attempts=3, initial_interval=0.01, backoff_factor=1.0, jitter=False, retry_on=ConnectionError
    )
    b.add_node("flaky", _flaky, retry_policy=policy)
    b.add_edge(START, "flaky")
    b.add_edge("flaky", END)
    return b.compile(checkpointer=checkpointer)


def _wrong_key(s: Job) -> dict[str, Any]:
    TALLY.hit("no_retry.lookup")
    raise KeyError(f"no job named {s['job']!r}")


def build_not_retried(checkpointer: Any = None) -> Any:
    b = StateGraph(Job)
    policy = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=ConnectionError)
    b.add_node("lookup", _wrong_key, retry_policy=policy)
    b.add_edge(START, "lookup")
    b.add_edge("lookup", END)
    return b.compile(checkpointer=checkpointer)


def _prepare(s: Job) -> dict[str, Any]:
    TALLY.hit("raises.prepare")
    return {"result": "prepared"}


def _explode(s: Job) -> dict[str, Any]:
    TALLY.hit("raises.explode")
    raise ValueError(f"order {s['job']} has no lines")


def build_raises(checkpointer: Any = None) -> Any:
    b = StateGraph(Job)
    b.add_node("prepare", _prepare)
    b.add_node("explode", _explode)
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "explode")
    b.add_edge("explode", END)
    return b.compile(checkpointer=checkpointer)


def _fails_first(s: Job) -> dict[str, Any]:
    if TALLY.hit("rerun.flaky") == 1:
        raise RuntimeError("the first run of this node fails")
    return {"result": f"{s['result']} then done"}


def build_rerun_after_failure(checkpointer: Any = None) -> Any:
    b = StateGraph(Job)
    b.add_node("prepare", _prepare)
    b.add_node("flaky", _fails_first)
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "flaky")
    b.add_edge("flaky", END)
    return b.compile(checkpointer=checkpointer)


def _charge(s: Job) -> dict[str, Any]:
    TALLY.hit("handler.charge")
    raise RuntimeError(f"card declined for {s['job']}")


def _recover(s: Job, error: NodeError) -> Command[Literal["notify"]]:
    TALLY.hit("handler.recover")
    return Command(goto="notify", update={"result": f"recovered from {error.node}: {error.error}"})


def _notify(s: Job) -> dict[str, Any]:
    TALLY.hit("handler.notify")
    return {"result": s["result"] + " (customer notified)"}


def build_error_handler(checkpointer: Any = None) -> Any:
    b = StateGraph(Job)
    b.add_node("charge", _charge, error_handler=_recover)
    b.add_node("notify", _notify)
    b.add_edge(START, "charge")
    b.add_edge("charge", END)
    b.add_edge("notify", END)
    return b.compile(checkpointer=checkpointer)


def _answers_by_id(pending: Any) -> Command[Any]:
    return Command(resume={i.id: str(i.value["question"]).upper() for i in pending})


# Every graph of the corpus, with the turns it runs on one thread. ----------------------------------
CASES: tuple[Case, ...] = (
    Case("linear", build_linear, ({"text": "hello", "trail": []},), ("updates", "values")),
    Case("loop", build_loop, ({"n": 0, "seen": []},), ("updates", ("updates", "values"))),
    Case("delta_channel", build_delta_channel, ({"n": 0, "log": []}, {"n": 5}), ("updates", "values")),
    Case("router_light", build_router, ({"weight": 3, "route": ""},)),
    Case("router_heavy", build_router, ({"weight": 30, "route": ""},)),
    Case("remaining_steps", build_remaining_steps, ({"n": 0},), config={"recursion_limit": 8}),
    Case("recursion_limit", build_recursion, ({"n": 0, "seen": []},), config={"recursion_limit": 6}),
    Case("branches", build_branches, ({"topic": "lunch", "votes": []},), parallel=True),
    Case("send_map_reduce", build_send, ({"xs": [1, 2, 3, 4, 5], "squares": []},), parallel=True),
    Case("command_goto", build_command, ({"amount": 40, "log": []}, {"amount": 400, "log": []})),
    Case(
        "add_messages",
        build_messages,
        ({"messages": [HumanMessage("world", id="first"), HumanMessage("gone soon", id="second")]},),
    ),
    Case("dataclass_state", build_dataclass, ({"item": "chair", "qty": 2},), ("updates", "values")),
    Case("pydantic_state", build_pydantic, ({"name": "  ada ", "age": 36},), ("updates", "values")),
    Case("retry_policy", build_retry, ({"job": "sync", "result": ""},)),
    Case("retry_on_not_matching", build_not_retried, ({"job": "ghost", "result": ""},)),
    Case("node_raises", build_raises, ({"job": "7", "result": ""},)),
    # invoke(None) after a failed run runs the failed node again from the thread's last checkpoint.
    Case("rerun_after_failure", build_rerun_after_failure, ({"job": "8", "result": ""}, None)),
    Case("error_handler", build_error_handler, ({"job": "order 9", "result": ""},)),
    Case("tool_agent", talk.build_tool_agent, ({"messages": [("user", "what about the lamp?")]},), parallel=True),
    Case("react_agent", talk.build_react_agent, ({"messages": [("user", "and the desk?")]},)),
    Case(
        "react_agent_messages_stream",
        talk.build_react_agent,
        ({"messages": [("user", "and the desk?")]},),
        ("messages", ("updates", "messages")),
    ),
    Case(
        "react_agent_parallel_tools", talk.build_react_agent, ({"messages": [("user", "lamp please")]},), parallel=True
    ),
    Case(
        "multi_turn_chat",
        talk.build_chat,
        ({"messages": [("user", "hello")]}, {"messages": [("user", "what do you remember?")]}),
        ("updates", "messages"),
    ),
    Case("subgraph", talk.build_subgraph, ({"text": "teh  quick   fox", "steps": []},)),
    Case("subgraph_in_node", talk.build_subgraph_call, ({"text": "one two three", "steps": []},)),
    Case("subgraph_interrupt", talk.build_subgraph_interrupt, ({"text": "a  b", "steps": []}, Command(resume="yes"))),
    Case(
        "interrupt", talk.build_approval, ({"topic": "otters", "draft": "", "status": ""}, Command(resume="approved"))
    ),
    Case(
        "resume_with_update",
        talk.build_approval,
        ({"topic": "otters", "draft": "", "status": ""}, Command(resume="ok", update={"draft": "All about seals."})),
    ),
    Case(
        "parallel_interrupts_by_id",
        talk.build_parallel_interrupts,
        ({"questions": ["tea", "coffee", "water"], "answers": []}, FromInterrupts(_answers_by_id)),
        parallel=True,
    ),
    Case(
        "one_value_for_several_interrupts",
        talk.build_parallel_interrupts,
        (
            {"questions": ["tea", "coffee"], "answers": []},
            Command(resume="same for all"),  # LangGraph refuses: each pending interrupt needs its ID
            FromInterrupts(_answers_by_id),
        ),
        parallel=True,
    ),
    Case(
        "two_interrupts_in_one_node",
        talk.build_two_interrupts,
        ({"name": "", "age": 0, "done": False}, Command(resume="Ada"), Command(resume=36)),
    ),
    Case("interrupt_before", talk.build_interrupt_before, ({"topic": "tides", "draft": "", "status": ""}, None)),
    Case("interrupt_after", talk.build_interrupt_after, ({"topic": "tides", "draft": "", "status": ""}, None)),
    Case("functional_api", talk.build_functional, ([1, 2, 3, 4],), ("updates", "values"), parallel=True),
    Case(
        "functional_api_interrupt",
        talk.build_functional_interrupt,
        ([1, 2, 3], Command(resume="approved")),
        parallel=True,
    ),
    Case(
        "custom_stream",
        talk.build_custom_stream,
        ({"size": 3, "done": []},),
        ("updates", "custom", ("updates", "custom")),
    ),
)


# Outside the corpus (too large to run for every comparison): a state past DTS's 1 MB payload cap.
class Bulky(TypedDict):
    chunks: Annotated[list[str], operator.add]
    size: int


def _grow(s: Bulky) -> dict[str, Any]:
    TALLY.hit("large.grow")
    return {"chunks": [f"{len(s['chunks'])}" * 1_500_000]}


def _measure_chunks(s: Bulky) -> dict[str, Any]:
    TALLY.hit("large.measure")
    return {"size": sum(len(c) for c in s["chunks"])}


def build_large_state(checkpointer: Any = None) -> Any:
    """Three nodes each add 1.5 MB to the state (4.5 MB in the end), then one measures it."""
    b = StateGraph(Bulky)
    names = ("grow_a", "grow_b", "grow_c")
    for name in names:
        b.add_node(name, _grow)
    b.add_node("measure", _measure_chunks)
    b.add_edge(START, names[0])
    b.add_edge(names[0], names[1])
    b.add_edge(names[1], names[2])
    b.add_edge(names[2], "measure")
    b.add_edge("measure", END)
    return b.compile(checkpointer=checkpointer)
