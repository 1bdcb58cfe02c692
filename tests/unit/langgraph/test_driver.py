"""The orchestrator-side driver run with an in-process executor: same results as LangGraph, same ids on replay."""

from __future__ import annotations

import operator
from datetime import datetime, timezone
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt

from durabletask.extensions.langgraph import _activity, _driver, _internals
from durabletask.extensions.langgraph._driver import dts_retry
from durabletask.extensions.langgraph._errors import ResumeRejectedError
from durabletask.extensions.langgraph._orchestrator import check_resume
from durabletask.extensions.langgraph._saver import ReplaySaver
from durabletask.extensions.langgraph._serde import load

ORCHESTRATION_TIME = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


class State(TypedDict):
    x: int
    items: Annotated[list[Any], operator.add]


def _graph() -> Any:
    def ask(s: State) -> dict[str, Any]:
        return {"items": [f"{s['x']}:{interrupt(s['x'])}"]}

    b = StateGraph(State)
    b.add_node("plan", lambda s: {"x": s["x"] + 1})
    b.add_node("ask", ask)
    b.add_node("done", lambda s: {"items": ["done"]})
    b.add_edge(START, "plan")
    b.add_conditional_edges("plan", lambda s: [Send("ask", {"x": i, "items": []}) for i in range(s["x"])], ["ask"])
    b.add_edge("ask", "done")
    b.add_edge("done", END)
    return b


def run(graph: Any, saver: ReplaySaver, ids: _internals.IdSource, inp: Any, **spec: Any) -> _driver.RunResult:
    """One run, its tasks executed in-process through the activity's code path."""
    _internals.install_id_shim()
    gen = _driver.drive_run(graph, saver, "t", _driver.RunSpec(inp, **spec), graph_name="g", instance_id="lg:g:t")
    sent: Any = None
    while True:
        with _internals.deterministic_ids(ids):
            try:
                calls = gen.send(sent)
            except StopIteration as stop:
                return stop.value
        sent = [_driver.TaskOutcome.from_payload(_activity.execute_task(graph, c.payload)) for c in calls]


def test_runs_match_langgraph_and_replays_make_the_same_ids() -> None:
    graph = _graph().compile()
    plain = _graph().compile(checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t"}}
    outputs: list[Any] = []
    for _ in range(2):  # a replay rebuilds everything from scratch
        saver, ids = ReplaySaver(), _internals.IdSource("lg:g:t", clock=lambda: ORCHESTRATION_TIME)
        first = run(graph, saver, ids, {"x": 1, "items": []})
        ids_seen = [i.id for i in _driver.invoke_output(first.chunks)["__interrupt__"]]
        second = run(graph, saver, ids, Command(resume={i: "ok" for i in ids_seen}))
        history = graph.copy(update={"checkpointer": saver}).get_state_history(cfg)
        kept = [
            (s.config["configurable"]["checkpoint_id"], s.created_at, s.values, s.next, s.metadata) for s in history
        ]
        outputs.append((ids_seen, _driver.invoke_output(second.chunks), kept))
    assert outputs[0] == outputs[1]
    assert {created for _, created, *_ in outputs[0][2]} == {ORCHESTRATION_TIME.isoformat()}
    expected_first = plain.invoke({"x": 1, "items": []}, cfg)
    resume = {i.id: "ok" for i in expected_first["__interrupt__"]}
    assert outputs[0][1] == plain.invoke(Command(resume=resume), cfg)


def test_message_ids_given_in_the_orchestrator_are_deterministic() -> None:
    class Chat(TypedDict):
        messages: Annotated[list[Any], add_messages]

    b = StateGraph(Chat)
    b.add_node("bot", lambda s: {"messages": [("ai", "hello")]})
    b.add_edge(START, "bot")
    graph = b.compile()
    found = []
    for _ in range(2):
        result = run(graph, ReplaySaver(), _internals.IdSource("lg:g:t"), {"messages": [HumanMessage("hi")]})
        found.append([m.id for m in _driver.invoke_output(result.chunks)["messages"]])
    assert found[0] == found[1] and all(found[0])


def test_a_node_error_ends_the_run_with_the_original_type_name() -> None:
    def boom(s: State) -> dict[str, Any]:
        raise ZeroDivisionError("nope")

    b = StateGraph(State)
    b.add_node("boom", boom)
    b.add_edge(START, "boom")
    result = run(b.compile(), ReplaySaver(), _internals.IdSource("s"), {"x": 0, "items": []})
    assert type(result.error).__name__ == "ZeroDivisionError"
    assert type(result.error).__module__ == "builtins"
    assert isinstance(result.error, ZeroDivisionError)  # built-in types: handlers can catch them as such
    assert str(result.error) == "nope"


def test_stand_ins_keep_the_exceptions_arguments_and_text() -> None:
    from durabletask.extensions.langgraph._errors import NodeFailedError, node_failure

    key = node_failure({"type": "builtins.KeyError", "message": "'k'", "args": ["k"]})
    assert isinstance(key, KeyError) and isinstance(key, NodeFailedError)
    assert (str(key), repr(key)) == (str(KeyError("k")), repr(KeyError("k")))
    custom = node_failure({"type": "shop.errors.OutOfStock", "message": "no lamps"})
    assert (type(custom).__module__, type(custom).__qualname__, str(custom)) == (
        "shop.errors",
        "OutOfStock",
        "no lamps",
    )
    assert custom.error_type == "shop.errors.OutOfStock"


@pytest.mark.adversarial
def test_a_node_error_whose_str_raises_is_described_by_its_type() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    described = _activity._describe(Unprintable("x"))
    assert described["type"].endswith("Unprintable")
    assert "Unprintable" in described["message"] and "str() raised RuntimeError" in described["message"]


def test_check_resume_refuses_what_nothing_waits_for() -> None:
    graph = _graph().compile()
    saver, ids = ReplaySaver(), _internals.IdSource("x")
    with pytest.raises(ResumeRejectedError, match="no pending interrupt"):
        check_resume(graph, saver, "t", Command(resume=1), None)
    first = run(graph, saver, ids, {"x": 2, "items": []})
    waiting = [i.id for i in _driver.invoke_output(first.chunks)["__interrupt__"]]
    check_resume(graph, saver, "t", Command(resume=dict.fromkeys(waiting, 1)), None)
    check_resume(graph, saver, "t", Command(resume={"plain": "dict"}), None)  # a value, not an id map
    with pytest.raises(ResumeRejectedError, match="f" * 32):
        check_resume(graph, saver, "t", Command(resume={"f" * 32: 1}), None)
    check_resume(graph, saver, "t", Command(resume=1), "some-checkpoint")  # forks are LangGraph's business


def test_saver_export_restores_everything() -> None:
    graph = _graph().compile()
    saver = ReplaySaver()
    run(graph, saver, _internals.IdSource("x"), {"x": 2, "items": []})
    restored = ReplaySaver.restore(saver.export())
    cfg = {"configurable": {"thread_id": "t"}}
    mine = graph.copy(update={"checkpointer": saver})
    theirs = graph.copy(update={"checkpointer": restored})
    assert list(mine.get_state_history(cfg)) == list(theirs.get_state_history(cfg))


def test_id_source_orders_checkpoint_ids_and_leaves_other_callers_alone() -> None:
    source = _internals.IdSource("a")
    made = [str(source.next_checkpoint_id()) for _ in range(5)]
    assert made == sorted(made) and len(set(made)) == 5
    assert _internals.IdSource("a").next_checkpoint_id() == _internals.IdSource("a").next_checkpoint_id()
    assert _internals.IdSource("a").next_checkpoint_id() != _internals.IdSource("b").next_checkpoint_id()
    _internals.install_id_shim()
    import langgraph.pregel._checkpoint as checkpoint_module

    outside = {checkpoint_module.uuid6() for _ in range(3)}  # no deterministic_ids block: random as before
    assert len(outside) == 3


def test_dts_retry_maps_the_first_policy() -> None:
    from langgraph.types import RetryPolicy

    assert dts_retry(None) is None
    policy = dts_retry([RetryPolicy(initial_interval=2, backoff_factor=3, max_interval=10, max_attempts=4)])
    assert policy is not None
    assert policy.max_number_of_attempts == 4
    assert policy.first_retry_interval.total_seconds() == 2
    assert policy.backoff_coefficient == 3
    assert policy.max_retry_interval is not None and policy.max_retry_interval.total_seconds() == 10


def test_prune_keeps_the_last_runs_checkpoints_and_the_state() -> None:
    b = StateGraph(State)
    b.add_node("a", lambda s: {"x": s["x"] + 1, "items": [s["x"]]})
    b.add_node("b", lambda s: {"items": ["b"]})
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    graph = b.compile()
    saver, ids = ReplaySaver(), _internals.IdSource("p")
    cfg: Any = {"configurable": {"thread_id": "t"}}
    for turn in range(3):
        if turn == 2:
            last_run_from = max(saver.storage["t"][""])
        run(graph, saver, ids, {"x": turn, "items": []})
    local = graph.copy(update={"checkpointer": saver})
    before, blobs = local.get_state(cfg), len(saver.blobs)
    full = [(s.config["configurable"]["checkpoint_id"], s.values) for s in local.get_state_history(cfg)]
    saver.forget_before("t", last_run_from)
    after = ReplaySaver.restore(saver.export())
    kept = [
        (s.config["configurable"]["checkpoint_id"], s.values)
        for s in graph.copy(update={"checkpointer": after}).get_state_history(cfg)
    ]
    assert graph.copy(update={"checkpointer": after}).get_state(cfg).values == before.values
    assert kept == full[: len(kept)] and len(kept) == 5  # the last run: from its starting checkpoint on
    assert len(saver.blobs) < blobs


def test_each_send_task_carries_only_its_own_packet() -> None:
    b = StateGraph(State)
    b.add_node("plan", lambda s: {"x": s["x"]})
    b.add_node("work", lambda s: {"items": [s["x"]]})
    b.add_edge(START, "plan")
    b.add_conditional_edges("plan", lambda s: [Send("work", {"x": i, "items": []}) for i in range(4)], ["work"])
    graph = b.compile()
    _internals.install_id_shim()
    gen = _driver.drive_run(
        graph, ReplaySaver(), "t", _driver.RunSpec({"x": 0, "items": []}), graph_name="g", instance_id="i"
    )
    calls = gen.send(None)
    while calls[0].node != "work":  # __start__, then plan
        calls = gen.send([_driver.TaskOutcome.from_payload(_activity.execute_task(graph, c.payload)) for c in calls])
    assert [c.node for c in calls] == ["work"] * 4
    assert {c.payload["checkpoint"]["b"] for c in calls} == {calls[0].payload["checkpoint"]["b"]}  # serialized once
    assert _internals.TASKS not in load(calls[0].payload["checkpoint"])["channel_values"]
    assert [(c.payload["send"]["index"], load(c.payload["send"]["packet"]).arg["x"]) for c in calls] == [
        (i, i) for i in range(4)
    ]
    outcomes = [_driver.TaskOutcome.from_payload(_activity.execute_task(graph, c.payload)) for c in calls]
    assert sorted(o.writes[0][1][0] for o in outcomes) == [0, 1, 2, 3]


def test_a_task_carries_the_channels_its_node_reads() -> None:
    class Small(TypedDict):
        x: int

    b = StateGraph(State)
    b.add_node("narrow", lambda s: {"items": [s["x"]]}, input_schema=Small)  # reads x only
    b.add_node("wide", lambda s: {"x": len(s["items"])})
    b.add_edge(START, "narrow")
    b.add_edge("narrow", "wide")
    b.add_conditional_edges("wide", lambda s: END if s["items"] else "wide")  # reads the state itself
    graph = b.compile()
    _internals.install_id_shim()
    spec = _driver.RunSpec({"x": 5, "items": ["big"]})
    gen = _driver.drive_run(graph, ReplaySaver(), "t", spec, graph_name="g", instance_id="i")
    seen: dict[str, set[str]] = {}
    try:
        calls = gen.send(None)
        while True:
            for call in calls:
                seen[call.node] = set(load(call.payload["checkpoint"])["channel_values"])
            calls = gen.send(
                [_driver.TaskOutcome.from_payload(_activity.execute_task(graph, c.payload)) for c in calls]
            )
    except StopIteration as stop:
        result = stop.value
    assert seen["narrow"] <= {"x", "branch:to:narrow"}
    assert {"x", "items"} <= seen["wide"]
    assert _driver.invoke_output(result.chunks) == graph.invoke({"x": 5, "items": ["big"]})


def test_the_state_of_one_checkpoint_travels_without_the_history() -> None:
    graph = _graph().compile()
    saver = ReplaySaver()
    run(graph, saver, _internals.IdSource("x"), {"x": 2, "items": []})
    cfg: Any = {"configurable": {"thread_id": "t"}}
    full = graph.copy(update={"checkpointer": saver})
    part = ReplaySaver.restore(saver.export_checkpoint("t", None))
    assert graph.copy(update={"checkpointer": part}).get_state(cfg) == full.get_state(cfg)
    assert len(list(graph.copy(update={"checkpointer": part}).get_state_history(cfg))) == 1
    older = list(full.get_state_history(cfg))[2].config
    at_older = ReplaySaver.restore(saver.export_checkpoint("t", older["configurable"]["checkpoint_id"]))
    assert graph.copy(update={"checkpointer": at_older}).get_state(older) == full.get_state(older)
    assert len(saver.export_checkpoint("t", None)["b"]) < len(saver.export()["b"])


def test_an_async_functional_task_is_refused_with_a_clear_error() -> None:
    from langgraph.func import entrypoint, task

    @task
    async def fetch(x: int) -> int:
        return x

    @entrypoint()
    async def workflow(x: int) -> int:
        return await fetch(x)

    result = run(workflow, ReplaySaver(), _internals.IdSource("f"), 1)
    assert isinstance(result.error, TypeError)
    assert "@task 'fetch' is async" in str(result.error)
