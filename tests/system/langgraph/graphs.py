"""The graphs of the LangGraph system tests, built alike by the worker processes and by the test's client.

Every node records its run in the shared :class:`Ledger` under ``{run}/{node}`` (with the PID of the process that
ran it), so a test can tell how many times each node ran and where, whatever happened to the processes. A node
that must block waits for a file ``release-{run}`` beside the ledger, which the test creates.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import RetryPolicy, Send, interrupt
from typing_extensions import TypedDict

from durabletask.extensions.langgraph import idempotency_key
from tests.support.langgraph_tokens import TokenModel
from tests.support.reliability import Ledger

CHAIN = ("n1", "n2", "n3", "n4", "n5")
BLOCKING = "n3"
FAN_OUT = 40
PINNED = ("prep", "gpu", "post")
# Long enough that the test sees the first failure recorded and kills the worker before the second attempt.
RETRY_INTERVAL = 3.0
RELEASE_WAIT = 120.0
SPREAD_WAIT = 60.0


class Run(TypedDict):
    run: str
    trail: Annotated[list[str], operator.add]


class Fan(TypedDict):
    run: str
    xs: list[int]
    squares: Annotated[list[int], operator.add]
    total: int


def release_file(ledger: Ledger, run: str) -> Path:
    return ledger.path.with_name(f"release-{run}")


def pids(ledger: Ledger, prefix: str) -> dict[str, set[int]]:
    """The PIDs that ran each node whose effect key starts with ``prefix``."""
    with contextlib.closing(sqlite3.connect(ledger.path, timeout=30)) as conn:
        rows = conn.execute("SELECT key, pid FROM attempts WHERE key LIKE ?", (f"{prefix}%",)).fetchall()
    found: dict[str, set[int]] = {}
    for key, pid in rows:
        found.setdefault(key, set()).add(pid)
    return found


def _wait_for_release(ledger: Ledger, run: str) -> None:
    deadline = time.monotonic() + RELEASE_WAIT
    while not release_file(ledger, run).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{run}: nobody released the blocked node within {RELEASE_WAIT:.0f} s")
        time.sleep(0.05)


def build_line(ledger: Ledger, names: tuple[str, ...], blocking: str | None = None, keyed: bool = False) -> Any:
    """``names`` in a line; the node ``blocking`` waits until released, first recording its idempotency key
    (under ``{run}/{node}/key/``) when ``keyed`` (the key exists only in a durable run)."""

    def step(name: str) -> Any:
        def node(s: Run) -> dict[str, Any]:
            ledger.apply(f"{s['run']}/{name}")
            if name == blocking:
                if keyed:
                    ledger.apply(f"{s['run']}/{name}/key/{idempotency_key()}")
                _wait_for_release(ledger, s["run"])
            return {"trail": [name]}

        node.__name__ = name
        return node

    b = StateGraph(Run)
    for name in names:
        b.add_node(name, step(name))
    b.add_edge(START, names[0])
    for first, then in itertools.pairwise(names):
        b.add_edge(first, then)
    b.add_edge(names[-1], END)
    return b.compile()


def build_approval(ledger: Ledger) -> Any:
    """``prepare`` → ``approve`` (waits through ``interrupt()``) → ``apply``."""

    def prepare(s: Run) -> dict[str, Any]:
        ledger.apply(f"{s['run']}/prepare")
        return {"trail": ["prepared"]}

    def approve(s: Run) -> dict[str, Any]:
        ledger.apply(f"{s['run']}/approve")
        decision = interrupt({"question": f"apply {s['run']}?"})
        return {"trail": [f"approved by {decision}"]}

    def apply(s: Run) -> dict[str, Any]:
        ledger.apply(f"{s['run']}/apply")
        return {"trail": ["applied"]}

    b = StateGraph(Run)
    b.add_node("prepare", prepare)
    b.add_node("approve", approve)
    b.add_node("apply", apply)
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "approve")
    b.add_edge("approve", "apply")
    b.add_edge("apply", END)
    return b.compile()


def build_fan_out(ledger: Ledger, spread: int = 2) -> Any:
    """One ``Send`` per item to ``square``, then ``total``; the squares wait for ``spread`` processes to join."""

    def scatter(s: Fan) -> list[Send]:
        return [Send("square", {"run": s["run"], "x": x}) for x in s["xs"]]

    def square(item: dict[str, Any]) -> dict[str, Any]:
        ledger.apply(f"{item['run']}/square/{item['x']}")
        # Hold the first squares until a second process has taken one, so one worker that connected first
        # cannot finish the fan-out alone; after the deadline go on anyway (the test then reports one PID).
        deadline = time.monotonic() + SPREAD_WAIT
        while len(set().union(*pids(ledger, f"{item['run']}/square/").values())) < spread:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        return {"squares": [item["x"] * item["x"]]}

    def total(s: Fan) -> dict[str, Any]:
        ledger.apply(f"{s['run']}/total")
        return {"total": sum(s["squares"])}

    b = StateGraph(Fan)
    b.add_node("square", square)
    b.add_node("total", total)
    b.add_conditional_edges(START, scatter, ["square"])
    b.add_edge("square", "total")
    b.add_edge("total", END)
    return b.compile()


class Talk(MessagesState):
    run: str


def build_speaker(ledger: Ledger) -> Any:
    """``speak`` calls a model that streams "Hel", waits until released, then streams "lo"."""

    def speak(s: Talk) -> dict[str, Any]:
        ledger.apply(f"{s['run']}/speak")
        model = TokenModel(between=lambda _index: _wait_for_release(ledger, s["run"]))
        return {"messages": [model.invoke(s["messages"])]}

    b = StateGraph(Talk)
    b.add_node("speak", speak)
    b.add_edge(START, "speak")
    b.add_edge("speak", END)
    return b.compile()


def build_retry(ledger: Ledger) -> Any:
    """``flaky`` fails its first two attempts (counted across processes in the ledger) and then succeeds."""

    def flaky(s: Run) -> dict[str, Any]:
        key = f"{s['run']}/flaky"
        ledger.apply(key)
        attempt = ledger.attempts()[key]
        if attempt < 3:
            raise ConnectionError(f"attempt {attempt}: the service did not answer")
        return {"trail": [f"done on attempt {attempt}"]}

    policy = RetryPolicy(
        max_attempts=3, initial_interval=RETRY_INTERVAL, backoff_factor=1.0, jitter=False, retry_on=ConnectionError
    )
    b = StateGraph(Run)
    b.add_node("flaky", flaky, retry_policy=policy)
    b.add_edge(START, "flaky")
    b.add_edge("flaky", END)
    return b.compile()


BUILDERS: dict[str, Callable[[Ledger], Any]] = {
    "approval": build_approval,
    # prep → gpu → post: the test serves gpu from one worker process only.
    "pinned": lambda ledger: build_line(ledger, PINNED),
    "retry": build_retry,
    "speaker": build_speaker,
}


def build_all(ledger: Ledger, *, durable: bool = True) -> dict[str, Any]:
    """Every graph; ``durable=False`` for plain LangGraph's reference run in one process."""
    graphs = {name: build(ledger) for name, build in BUILDERS.items()}
    # n1 → ... → n5, n3 blocking until released.
    graphs["chain"] = build_line(ledger, CHAIN, BLOCKING, keyed=durable)
    graphs["fan_out"] = build_fan_out(ledger, spread=2 if durable else 1)
    return graphs
