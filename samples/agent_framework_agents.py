"""Durable agents with Microsoft Agent Framework (``agent-framework-durabletask``) on this SDK and its emulator.

Needs Agent Framework's Durable Task integration installed beside the SDK (see the README's Durable agents
section). The "model"
is a scripted chat client (samples/_scripted_chat.py), so the sample runs offline and gives the same answers
every time; swap in a hosted chat client and nothing else changes.

The emulator runs in this process on a SQLite file; the agents live in a worker process started from this
file (``--worker``). Five scenarios run:

* a durable agent with a tool: the client asks the ``weather`` agent, whose model asks for the
  ``get_forecast`` tool and then answers; the conversation is kept in the agent's durable entity;
* an orchestration over two agents: ``trip_plan`` asks ``weather`` for a forecast, then ``planner`` for a plan;
* human in the loop: ``approved_plan`` has ``planner`` draft a plan and waits for an ``approval`` event; a
  rejection with feedback makes the planner revise it in the same conversation, an approval ends the run;
* a workflow: ``trip_desk`` (an Agent Framework ``Workflow``) routes a question to the weather agent or the
  planner, then pauses on a human-in-the-loop request until a reviewer answers;
* recovery: ``trip_plan`` runs on a worker whose planner call never returns; once the weather agent's model
  calls are done, the worker is killed with SIGKILL and a new one started. The run completes, and the call log
  shows that no completed model call ran twice: only the call that was in flight when the worker died ran again.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from _scripted_chat import CallRecord, Reply, ScriptedChatClient, ToolCall, Turn, read_call_log
from _support import Runtime, parse_args, spawn_worker_process, stop_worker_processes, wait_for_custom_status
from agent_framework import (
    Agent,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Case,
    Default,
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from agent_framework_durabletask import (
    DurableAgentState,
    DurableAIAgentClient,
    DurableAIAgentOrchestrationContext,
    DurableAIAgentWorker,
    DurableWorkflowClient,
)
from pydantic import BaseModel
from typing_extensions import Never

from durabletask import client, task
from durabletask.entities import EntityInstanceId

FORECASTS = {"Oslo": "light rain and 7 degrees", "Bergen": "clear skies and 11 degrees"}
SCRIPTS = {
    "weather": [
        Turn(f"forecast for {city}", (ToolCall("get_forecast", {"city": city}), Reply(f"{city}: {{tool_result}}.")))
        for city in FORECASTS
    ],
    "planner": [
        Turn("plan a day in Oslo", (Reply("Oslo: morning at the fjord, lunch at the harbour, evening concert."),)),
        Turn("plan a day in Bergen", (Reply("Bergen: Mount Floyen at sunrise, fish market, Bryggen walk."),)),
        Turn("revise the plan", (Reply("Oslo: Munch museum (it rains), lunch at the harbour, evening concert."),)),
    ],
}
WAIT = 120.0  # the longest the sample waits for any one step (seconds): generous, for a busy machine
STALLED_TURN = "plan a day in Bergen"  # the recovery run's planner call, in flight when its worker is killed


def get_forecast(city: str) -> str:
    """Tomorrow's weather for a city."""
    return FORECASTS.get(city, "no forecast")


def build_agents(call_log: Path, stall_on: str | None) -> list[Agent]:
    def chat(name: str) -> ScriptedChatClient:
        return ScriptedChatClient(name, SCRIPTS[name], call_log, stall_on=stall_on)

    return [
        Agent(client=chat("weather"), name="weather", instructions="Give short forecasts.", tools=[get_forecast]),
        Agent(client=chat("planner"), name="planner", instructions="Plan a day around the weather."),
    ]


def trip_plan(ctx: task.OrchestrationContext, city: str) -> Any:
    """Two agents, one after the other: the planner works from the weather agent's forecast."""
    agents = DurableAIAgentOrchestrationContext(ctx)
    forecast = yield agents.get_agent("weather").run(f"What is the forecast for {city}?")
    plan = yield agents.get_agent("planner").run(f"Please plan a day in {city}. Forecast: {forecast.text}")
    return {"forecast": forecast.text, "plan": plan.text}


def approved_plan(ctx: task.OrchestrationContext, city: str) -> Any:
    """The planner drafts; a person approves, or rejects with feedback and the planner revises."""
    planner = DurableAIAgentOrchestrationContext(ctx).get_agent("planner")
    session = planner.create_session()  # one conversation for every round, so a revision sees the draft
    draft = yield planner.run(f"Please plan a day in {city}.", session=session)
    for round_no in range(1, 4):
        ctx.set_custom_status({"awaiting_approval": round_no, "draft": draft.text})
        decision = ctx.wait_for_external_event("approval")
        expiry = ctx.create_timer(ctx.current_utc_datetime + timedelta(days=1))
        if (yield task.when_any([decision, expiry])) is expiry:
            return {"status": "expired", "draft": draft.text}
        verdict = decision.get_result()
        if verdict.get("approved"):
            return {"status": "approved", "by": verdict.get("by"), "rounds": round_no, "plan": draft.text}
        draft = yield planner.run(f"Please revise the plan: {verdict.get('feedback')}", session=session)
    return {"status": "rejected", "draft": draft.text}


@dataclass
class TripQuestion:
    """What the trip desk workflow is asked: a forecast, or a plan, for a city."""

    city: str
    topic: str  # "forecast" or "plan"


@dataclass
class Draft:
    """An agent's answer, waiting for a person's review."""

    text: str


class Review(BaseModel):
    """A person's verdict on a draft."""

    approved: bool
    by: str


class Triage(Executor):
    """Turns a question into a prompt; the workflow's switch then routes it to the right agent."""

    def __init__(self) -> None:
        super().__init__(id="triage")

    @handler
    async def ask(self, question: TripQuestion, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
        prompt = (
            f"What is the forecast for {question.city}?"
            if question.topic == "forecast"
            else f"Please plan a day in {question.city}."
        )
        await ctx.send_message(AgentExecutorRequest(messages=[Message(role="user", contents=[prompt])]))


class Desk(Executor):
    """Asks a person to review the agent's answer (a human-in-the-loop request), then publishes it or not."""

    def __init__(self) -> None:
        super().__init__(id="desk")

    @handler
    async def review(self, answer: AgentExecutorResponse, ctx: WorkflowContext) -> None:
        await ctx.request_info(request_data=Draft(answer.agent_response.text), response_type=Review)

    @response_handler
    async def reviewed(self, draft: Draft, review: Review, ctx: WorkflowContext[Never, str]) -> None:
        verdict = f"published, approved by {review.by}" if review.approved else f"withdrawn by {review.by}"
        await ctx.yield_output(f"{draft.text} ({verdict})")


def trip_desk(weather: Agent, planner: Agent) -> Workflow:
    """Triage routes a question to the weather agent or the planner; the desk has a person review the answer."""
    triage, desk = Triage(), Desk()
    return (
        WorkflowBuilder(name="trip_desk", start_executor=triage, output_from=[desk])
        .add_switch_case_edge_group(
            triage,
            [
                Case(condition=lambda request: "forecast" in request.messages[-1].text, target=weather),
                Default(target=planner),
            ],
        )
        .add_edge(weather, desk)
        .add_edge(planner, desk)
        .build()
    )


def serve(args: argparse.Namespace) -> int:
    """The worker process: hosts both agents, both orchestrations and the workflow until its stdin closes."""
    rt = Runtime(args.connection_string, args.address)
    with rt.worker() as w:
        hosted = DurableAIAgentWorker(w)
        agents = build_agents(Path(args.call_log), args.stall_on)
        for agent in agents:
            hosted.add_agent(agent)
        hosted.configure_workflow(trip_desk(*agents))  # its agents become entities of the workflow's own
        w.add_orchestrator(trip_plan)
        w.add_orchestrator(approved_plan)
        w.start()
        stalls = f", stalling on {args.stall_on!r}" if args.stall_on else ""
        agent_names, workflow_names = (
            ", ".join(hosted.registered_agent_names),
            ", ".join(hosted.registered_workflow_names),
        )
        print(f"[worker pid {os.getpid()}] hosting agents {agent_names}; workflow {workflow_names}{stalls}", flush=True)
        sys.stdin.read()  # until the parent closes our stdin (or kills us)
    return 0


def ask_weather(c: client.TaskHubGrpcClient) -> bool:
    """A durable agent called from a client: signal its entity, then read the answer from its state."""
    weather = DurableAIAgentClient(c, max_poll_retries=int(WAIT * 10), poll_interval_seconds=0.1).get_agent("weather")
    session = weather.create_session()
    answer = weather.run("What is the forecast for Oslo?", session=session)
    print(f"weather agent: {answer.text}")
    sid = session.durable_session_id
    entity = c.get_entity(EntityInstanceId(sid.entity_name, sid.key), include_state=True)
    state = DurableAgentState.from_json(entity.get_state()) if entity is not None else DurableAgentState()
    kinds = [type(part).__name__ for e in state.data.conversation_history for m in e.messages for part in m.contents]
    print(f"  entity {sid.entity_name}@{sid.key[:8]}... keeps the conversation: {', '.join(kinds)}")
    return answer.text == f"Oslo: {FORECASTS['Oslo']}." and "DurableAgentStateFunctionCallContent" in kinds


def run_trip(c: client.TaskHubGrpcClient, city: str) -> bool:
    iid = c.schedule_new_orchestration(trip_plan, input=city, instance_id=f"trip-{city.lower()}")
    return _report(c, iid)


def run_approval(c: client.TaskHubGrpcClient, call_log: Path) -> bool:
    iid = c.schedule_new_orchestration(approved_plan, input="Oslo", instance_id="approval-oslo")
    wait_for_custom_status(c, iid, '"awaiting_approval": 1', timeout=WAIT)
    print(f"{iid}: draft waiting for approval; the reviewer asks for an indoor morning")
    c.raise_orchestration_event(iid, "approval", data={"approved": False, "feedback": "it rains, go indoors"})
    wait_for_custom_status(c, iid, '"awaiting_approval": 2', timeout=WAIT)
    print(f"{iid}: revised draft waiting for approval; the reviewer approves")
    c.raise_orchestration_event(iid, "approval", data={"approved": True, "by": "alice"})
    completed = _report(c, iid)
    revision = next(r for r in read_call_log(call_log) if r.turn == "revise the plan" and r.event == "served")
    # The draft and the request for it come before the feedback: the planner revised its own draft.
    print(f"  the planner revised with {revision.history} earlier messages in its conversation")
    return completed and revision.history == 2


def run_desk(c: client.TaskHubGrpcClient) -> bool:
    """The workflow, twice: a forecast question goes to the weather agent, a plan question to the planner."""
    desk = DurableWorkflowClient(c, workflow_name="trip_desk")
    outputs = []
    for topic in ("forecast", "plan"):
        iid = desk.start_workflow(input=TripQuestion("Oslo", topic), instance_id=f"desk-{topic}")
        deadline = time.monotonic() + WAIT
        while not (pending := desk.get_pending_hitl_requests(iid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pending:
            raise TimeoutError(f"{iid} never asked for a review")
        print(f"{iid}: {pending[0]['source_executor_id']} asks for a review ({pending[0]['request_type']})")
        desk.send_hitl_response(iid, pending[0]["request_id"], {"approved": True, "by": "bob"})
        outputs.append(desk.await_workflow_output(iid, timeout_seconds=int(WAIT)))
        print(f"{iid}: output {outputs[-1]}")
    return outputs == [
        [f"Oslo: {FORECASTS['Oslo']}. (published, approved by bob)"],
        [f"{SCRIPTS['planner'][0].steps[0].text} (published, approved by bob)"],
    ]


def _report(c: client.TaskHubGrpcClient, iid: str) -> bool:
    state = c.wait_for_orchestration_completion(iid, timeout=WAIT)
    assert state is not None
    print(f"{iid}: {state.runtime_status.name} {state.serialized_output}")
    return state.runtime_status == client.OrchestrationStatus.COMPLETED


def run_recovery(c: client.TaskHubGrpcClient, rt: Runtime, call_log: Path) -> bool:
    """Kill the worker while the planner's model call is in flight; a new worker finishes the run."""
    print("-- recovery from a killed worker")
    before = len(read_call_log(call_log))
    first = spawn_worker_process(
        "agent_framework_agents.py", rt, "--worker", "--call-log", str(call_log), "--stall-on", STALLED_TURN
    )
    iid = c.schedule_new_orchestration(trip_plan, input="Bergen", instance_id="trip-bergen")
    _wait_for_call(call_log, "planner", STALLED_TURN)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    print(f"[main] killed worker pid {first.pid} with SIGKILL during the planner's model call")
    second = spawn_worker_process("agent_framework_agents.py", rt, "--worker", "--call-log", str(call_log))
    try:
        completed = _report(c, iid)
    finally:
        stop_worker_processes([second])
    return _check_recovery(read_call_log(call_log)[before:], first.pid, second.pid) and completed


def _wait_for_call(call_log: Path, agent: str, turn: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(r.event == "start" and r.agent == agent and r.turn == turn for r in read_call_log(call_log)):
            return
        time.sleep(0.05)
    raise TimeoutError(f"{agent} never started its model call for {turn!r}")


def _check_recovery(mine: list[CallRecord], first_pid: int, second_pid: int) -> bool:
    started = Counter(r.key for r in mine if r.event == "start")
    served = Counter(r.key for r in mine if r.event == "served")
    names = {first_pid: "first worker", second_pid: "second worker"}
    print("  model calls (agent, turn, step: started / served, where):")
    for key in sorted(started):
        where = ", ".join(f"{r.event} in {names.get(r.pid, r.pid)}" for r in mine if r.key == key)
        print(f"    {key[0]:8} {key[1]!r:24} step {key[2]}: {started[key]} / {served[key]} ({where})")
    stalled = ("planner", STALLED_TURN, 0)
    ok = (
        set(served) == set(started)
        and all(n == 1 for n in served.values())
        and all(started[k] == 1 for k in started if k != stalled)
        and started[stalled] == 2
        and {r.pid for r in mine if r.key == stalled and r.event == "served"} == {second_pid}
    )
    print(
        "  no completed model call was repeated; only the interrupted one ran again"
        if ok
        else "  UNEXPECTED model calls"
    )
    return ok


def _check_each_once(records: list[CallRecord]) -> bool:
    started = Counter(r.key for r in records if r.event == "start")
    served = Counter(r.key for r in records if r.event == "served")
    ok = started == served and all(n == 1 for n in served.values())
    print(f"  model calls: {sum(served.values())} served, {'each once' if ok else f'UNEXPECTED: {served}'}")
    return ok


def scenario(title: str, call_log: Path, run: Any, *args: Any) -> bool:
    """Run one scenario on the steady worker and check the model calls it added to the call log."""
    print(f"-- {title}")
    before = len(read_call_log(call_log))
    completed = run(*args)
    return _check_each_once(read_call_log(call_log)[before:]) and completed


def main() -> int:
    def options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--call-log", help=argparse.SUPPRESS)
        p.add_argument("--stall-on", help=argparse.SUPPRESS)
        p.add_argument("--db", help="the emulator's SQLite file (default: one in a temporary folder)")

    args = parse_args(__doc__ or "", options)
    if args.worker:
        return serve(args)
    with tempfile.TemporaryDirectory() as tmp:
        call_log = Path(tmp) / "model-calls.jsonl"
        db = None if args.connection_string or args.address else args.db or str(Path(tmp) / "emulator.db")
        with Runtime(args.connection_string, args.address, db_path=db) as rt, rt.client() as c:
            if db:
                print(f"[emulator] state in {db}")
            steady = spawn_worker_process("agent_framework_agents.py", rt, "--worker", "--call-log", str(call_log))
            try:
                ok = [
                    scenario("a durable agent with a tool", call_log, ask_weather, c),
                    scenario("an orchestration over two agents", call_log, run_trip, c, "Oslo"),
                    scenario("human in the loop", call_log, run_approval, c, call_log),
                    scenario("a workflow with routing and a review", call_log, run_desk, c),
                ]
            finally:
                stop_worker_processes([steady])
            ok.append(run_recovery(c, rt, call_log))
        print("all scenarios completed as expected" if all(ok) else "SOME SCENARIOS FAILED")
        return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
