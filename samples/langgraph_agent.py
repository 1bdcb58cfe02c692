"""A LangGraph support agent run durably: tool calls, a manager's approval through interrupt(), a killed worker.

The graph is plain LangGraph: an ``agent`` node calls a chat model with two tools, a ``ToolNode`` runs them,
and a ``review`` node stops for a manager's approval (``interrupt()``) before any refund is paid. The model is
scripted (``_langgraph_support.ScriptedChatModel``, a LangChain ``BaseChatModel``), so the sample runs offline;
put a real chat model in its place and nothing else changes.

The emulator runs in this process; the graph's nodes run in a worker process started from this file. While the
``lookup_order`` tool is running, that worker is killed with SIGKILL and a second one is started: the run goes
on there, the tool that was in flight runs again, and no model call is repeated. The run then waits for the
approval (no worker is busy while it waits), and the approval resumes it to the end.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _langgraph_support import Reply, ScriptedChatModel, ToolCalls, Turn, append_call, read_call_log
from _support import Runtime, parse_args, spawn_worker_process, stop_worker_processes
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from durabletask import client
from durabletask.extensions.langgraph import DurableGraph, idempotency_key, instance_id, register_graph

GRAPH = "support"
THREAD = {"configurable": {"thread_id": "ticket-42"}}
QUESTION = "Order 42 arrived broken, can I get a refund?"
SCRIPT = (
    Turn(
        "refund",
        (
            ToolCalls((("lookup_order", {"order_id": 42}),)),
            ToolCalls((("issue_refund", {"order_id": 42, "amount": 30}),)),
            Reply("Done: {tool_result}. Sorry about the broken lamp!"),
        ),
    ),
)
STALL_LIMIT_SECONDS = 120.0
STALL_TOOL = {"name": ""}  # set in the first worker process: the tool that is in flight when it is killed


def build_graph(call_log: Path) -> Any:
    """The support agent; every model and tool call is written to ``call_log``."""

    @tool
    def lookup_order(order_id: int) -> str:
        """What the shop knows about an order."""
        append_call(call_log, {"event": "tool", "tool": "lookup_order", "key": idempotency_key()})
        if STALL_TOOL["name"] == "lookup_order":
            _stall()
        return f"order {order_id}: one desk lamp, 30 euros, delivered yesterday"

    @tool
    def issue_refund(order_id: int, amount: int) -> str:
        """Pays a refund for an order."""
        # The key is the same on every delivery of this task: a payment service can deduplicate on it.
        append_call(call_log, {"event": "tool", "tool": "issue_refund", "key": idempotency_key()})
        return f"refunded {amount} euros for order {order_id}"

    tools = [lookup_order, issue_refund]
    model = ScriptedChatModel(script=SCRIPT, call_log=call_log).bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return END
        return "review" if any(c["name"] == "issue_refund" for c in last.tool_calls) else "tools"

    def review(state: MessagesState) -> Command[Any]:
        call = state["messages"][-1].tool_calls[0]  # type: ignore[union-attr]
        decision = interrupt({"approve refund": call["args"]})
        if decision.get("approved"):
            return Command(goto="tools")
        refused = ToolMessage(f"the manager declined: {decision.get('reason', '')}", tool_call_id=call["id"])
        return Command(goto="agent", update={"messages": [refused]})

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("review", review, destinations=("tools", "agent"))
    b.add_node("tools", ToolNode(tools))
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", route, ["review", "tools", END])
    b.add_edge("tools", "agent")
    return b.compile()


def _stall() -> None:
    deadline = time.monotonic() + STALL_LIMIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.1)
    raise TimeoutError(f"the tool was meant to be interrupted, but its process ran for {STALL_LIMIT_SECONDS:.0f} s")


def run_worker(rt: Runtime, call_log: Path, stall_tool: str | None) -> None:
    STALL_TOOL["name"] = stall_tool or ""
    with rt.worker() as w:
        register_graph(w, GRAPH, build_graph(call_log))
        w.start()
        print(f"[worker pid {os.getpid()}] serving graph '{GRAPH}'", flush=True)
        sys.stdin.read()  # until the parent closes our stdin (or kills us)


def _wait_for_tool(call_log: Path, name: str, pid: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(r.get("tool") == name and r["pid"] == pid for r in read_call_log(call_log)):
            return
        time.sleep(0.05)
    raise TimeoutError(f"worker {pid} never started {name}")


def _show_calls(call_log: Path, pids: dict[int, str]) -> bool:
    records = read_call_log(call_log)
    models = Counter((r["turn"], r["step"]) for r in records if r["event"] == "model")
    tools = Counter(r["tool"] for r in records if r["event"] == "tool")
    print("model calls: " + ", ".join(f"step {step}: {n}" for (_, step), n in sorted(models.items())))
    print("tool calls: " + ", ".join(f"{name}: {n}" for name, n in sorted(tools.items())))
    for r in records:
        what = f"model step {r['step']}" if r["event"] == "model" else f"tool {r['tool']}"
        print(f"  {what:<22} ran in the {pids.get(r['pid'], 'pid ' + str(r['pid']))}")
    keys = {r["key"] for r in records if r.get("tool") == "lookup_order"}
    print(f"lookup_order ran {tools['lookup_order']} times under {len(keys)} idempotency key: {sorted(keys)}")
    return all(n == 1 for n in models.values()) and len(models) == len(SCRIPT[0].steps) and len(keys) == 1


def _in_flight(c: client.TaskHubGrpcClient, instance: str) -> list[str]:
    """The activities scheduled and not yet finished, read from the instance's history."""
    history = c.get_orchestration_history(instance)
    scheduled = {e.event_id: e.name for e in history if type(e).__name__ == "TaskScheduledEvent"}
    for e in history:
        if type(e).__name__ in ("TaskCompletedEvent", "TaskFailedEvent"):
            scheduled.pop(e.task_scheduled_id, None)
    return sorted(scheduled.values())


def run_scenario(rt: Runtime, call_log: Path) -> int:
    first = spawn_worker_process(
        "langgraph_agent.py", rt, "--worker", "--call-log", str(call_log), "--stall-tool", "lookup_order"
    )
    procs = [first]
    c = rt.client()
    try:
        app = DurableGraph(c, GRAPH, build_graph(call_log))
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(app.invoke, {"messages": [("user", QUESTION)]}, THREAD)
            _wait_for_tool(call_log, "lookup_order", first.pid)
            os.kill(first.pid, signal.SIGKILL)
            first.wait(30)
            print(f"[main] killed worker pid {first.pid} with SIGKILL while lookup_order ran")
            second = spawn_worker_process("langgraph_agent.py", rt, "--worker", "--call-log", str(call_log))
            procs = [second]
            waiting = running.result(timeout=120)
        [pending] = waiting["__interrupt__"]
        print(f"ticket-42 waits for the manager: {pending.value}")
        instance = instance_id(GRAPH, THREAD["configurable"]["thread_id"])
        state = c.get_orchestration_state(instance)
        assert state is not None
        print(
            f"while it waits: {instance} is {state.runtime_status.name}, "
            f"activities in flight: {_in_flight(c, instance)}"
        )
        done = app.invoke(Command(resume={pending.id: {"approved": True, "by": "alice"}}), THREAD)
        print(f"ticket-42 answer: {done['messages'][-1].content}")
        snapshot = app.get_state(THREAD)
        print(f"ticket-42 state: {len(snapshot.values['messages'])} messages, next {list(snapshot.next)}")
        fine = _show_calls(call_log, {first.pid: "first worker (killed)", second.pid: "second worker"})
        print("no model call was repeated" if fine else "a model call ran more than once")
        return 0 if fine else 1
    finally:
        c.close()
        stop_worker_processes(procs)


def main() -> int:
    def extra(p: argparse.ArgumentParser) -> None:
        p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--call-log", help=argparse.SUPPRESS)
        p.add_argument("--stall-tool", help=argparse.SUPPRESS)

    args = parse_args(__doc__ or "", extra)
    if args.worker:
        run_worker(Runtime.from_args(args), Path(args.call_log), args.stall_tool)
        return 0
    with Runtime.from_args(args) as rt, tempfile.TemporaryDirectory() as folder:
        return run_scenario(rt, Path(folder) / "calls.jsonl")


if __name__ == "__main__":
    raise SystemExit(main())
