"""Durable runs give what plain LangGraph gives: invoke, stream, interrupts, failures, retries, multi-turn."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from durabletask.extensions.langgraph import GraphRunError, ResumeRejectedError
from tests.e2e.langgraph import graphs
from tests.e2e.langgraph.conftest import Serve, interrupt_values, reference, thread

PARITY = {
    "linear": (graphs.linear, {"x": 1, "items": []}),
    "cycle": (graphs.cycle, {"x": 0, "items": []}),
    "fan_out": (graphs.fan_out, {"x": 4, "items": []}),
    "command_goto": (graphs.command_goto, {"x": 3, "items": []}),
    "dataclass": (graphs.dataclass_state, {"n": 2, "log": []}),
}


@pytest.mark.parametrize("case", sorted(PARITY))
def test_invoke_and_stream_equal_plain_langgraph(serve: Serve, case: str) -> None:
    build, inp = PARITY[case]
    app = serve(build())
    plain = reference(build())
    assert app.invoke(inp, thread()) == plain.invoke(inp, thread())
    for mode in ("updates", "values", ["updates", "values"]):
        durable = list(app.stream(inp, thread(), stream_mode=mode))
        expected = list(plain.stream(inp, thread(), stream_mode=mode))
        assert sorted(map(repr, durable)) == sorted(map(repr, expected)), mode


def test_interrupts_resume_each_by_id_and_stay_stable(serve: Serve) -> None:
    app = serve(graphs.approvals())
    plain = reference(graphs.approvals())
    cfg, ref_cfg = thread(), thread()
    first = app.invoke({"x": 0, "items": []}, cfg)
    ref_first = plain.invoke({"x": 0, "items": []}, ref_cfg)
    assert interrupt_values(first) == interrupt_values(ref_first)
    asked = {i.value: i.id for i in first["__interrupt__"]}
    # The state view reports the same interrupts, with the same ids, however often the thread replays.
    assert sorted(i.id for i in app.get_state(cfg).interrupts) == sorted(asked.values())
    answers = {asked["approve 1?"]: "yes", asked["approve 2?"]: "no"}
    ref_asked = {i.value: i.id for i in ref_first["__interrupt__"]}
    ref_answers = {ref_asked["approve 1?"]: "yes", ref_asked["approve 2?"]: "no"}
    assert app.invoke(Command(resume=answers), cfg) == plain.invoke(Command(resume=ref_answers), ref_cfg)
    assert graphs.CALLS["ask1"] == 2 * 2 and graphs.CALLS["ask2"] == 2 * 2  # asked, then resumed: in both runs


def test_bad_resumes_are_refused_and_the_thread_keeps_waiting(serve: Serve) -> None:
    app = serve(graphs.approvals())
    cfg = thread()
    with pytest.raises(ResumeRejectedError, match="no pending interrupt"):
        app.invoke(Command(resume="early"), thread())
    first = app.invoke({"x": 0, "items": []}, cfg)
    unknown = "0" * 32
    with pytest.raises(ResumeRejectedError, match=unknown):
        app.invoke(Command(resume={unknown: "?"}), cfg)
    assert sorted(i.id for i in app.get_state(cfg).interrupts) == sorted(i.id for i in first["__interrupt__"])
    done = app.invoke(Command(resume={i.id: "ok" for i in first["__interrupt__"]}), cfg)
    assert sorted(done["items"]) == sorted(["plan", "1:ok", "2:ok", "done"])
    with pytest.raises(ResumeRejectedError, match="no pending interrupt"):
        app.invoke(Command(resume="late"), cfg)


def test_a_plain_resume_value_answers_a_single_interrupt(serve: Serve) -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def build() -> Any:
        b = StateGraph(graphs.Items)
        b.add_node("ask", lambda s: {"items": [interrupt("name?")]})
        b.add_edge(START, "ask")
        b.add_edge("ask", END)
        return b

    app, plain = serve(build()), reference(build())
    cfg, ref_cfg = thread(), thread()
    assert interrupt_values(app.invoke({"x": 0, "items": []}, cfg)) == interrupt_values(
        plain.invoke({"x": 0, "items": []}, ref_cfg)
    )
    assert app.invoke(Command(resume="Ada"), cfg) == plain.invoke(Command(resume="Ada"), ref_cfg)


def test_a_node_that_raises_fails_the_run_with_its_type_and_message(serve: Serve) -> None:
    app = serve(graphs.failing())
    with pytest.raises(ValueError, match="bad x 7"):
        reference(graphs.failing()).invoke({"x": 7, "items": []}, thread())
    cfg = thread()
    with pytest.raises(GraphRunError) as caught:
        app.invoke({"x": 7, "items": []}, cfg)
    assert caught.value.error_type == "builtins.ValueError"
    assert caught.value.error_message == "bad x 7"
    state = app.client.get_orchestration_state(caught.value.instance_id)
    assert state.failure_details.error_type == "builtins.ValueError"


def test_after_a_failed_run_the_thread_keeps_its_state_and_goes_on(serve: Serve) -> None:
    app, plain = serve(graphs.fails_once()), reference(graphs.fails_once())
    cfg, ref_cfg = thread(), thread()
    with pytest.raises(GraphRunError, match="first try"):
        app.invoke({"x": 1, "items": []}, cfg)
    with pytest.raises(RuntimeError, match="first try"):
        plain.invoke({"x": 1, "items": []}, ref_cfg)
    failed, ref_failed = app.get_state(cfg), plain.get_state(ref_cfg)
    assert (failed.values, failed.next) == (ref_failed.values, ref_failed.next)
    assert (failed.values, failed.next) == ({"x": 1, "items": ["ok"]}, ("flaky",))
    assert [t.error for t in failed.tasks] == [t.error for t in ref_failed.tasks] == ["RuntimeError('first try')"]
    assert app.invoke(None, cfg) == plain.invoke(None, ref_cfg) == {"x": 1, "items": ["ok", "flaky ok"]}
    assert len(list(app.get_state_history(cfg))) == len(list(plain.get_state_history(ref_cfg)))


def test_recursion_limit_fails_the_run(serve: Serve) -> None:
    app = serve(graphs.cycle())
    cfg = {**thread(), "recursion_limit": 3}
    with pytest.raises(GraphRunError) as caught:
        app.invoke({"x": 0, "items": []}, cfg)
    assert caught.value.error_type.endswith("GraphRecursionError")
    assert "Recursion limit of 3 reached" in caught.value.error_message


def test_retry_policy_is_a_durable_retry_with_one_idempotency_key(serve: Serve) -> None:
    app = serve(graphs.retrying(fail_times=2))
    out = app.invoke({"x": 0, "items": []}, thread())
    assert out["items"] == ["ok after 3"]
    assert graphs.CALLS["flaky"] == 3
    assert len(set(graphs.KEYS)) == 1 and graphs.KEYS[0].startswith("lg:")


def test_retry_on_false_fails_at_the_first_attempt(serve: Serve) -> None:
    app = serve(graphs.retrying(fail_times=5, retry_on=lambda exc: False))
    with pytest.raises(GraphRunError) as caught:
        app.invoke({"x": 0, "items": []}, thread())
    assert caught.value.error_type.endswith("Flaky")
    assert graphs.CALLS["flaky"] == 1


def test_exhausted_retries_fail_the_run(serve: Serve) -> None:
    app = serve(graphs.retrying(fail_times=5))
    with pytest.raises(GraphRunError, match="attempt 3"):
        app.invoke({"x": 0, "items": []}, thread())
    assert graphs.CALLS["flaky"] == 3


def test_a_second_invoke_continues_the_thread(serve: Serve) -> None:
    app, plain = serve(graphs.chat()), reference(graphs.chat())
    cfg, ref_cfg = thread(), thread()
    for text in ("hi", "again", "bye"):
        got = app.invoke({"messages": [HumanMessage(text)]}, cfg)
        expected = plain.invoke({"messages": [HumanMessage(text)]}, ref_cfg)
        assert graphs.without_message_ids(got) == graphs.without_message_ids(expected)
    assert all(m.id for m in got["messages"])


def test_custom_stream_chunks_come_with_the_nodes_updates(serve: Serve) -> None:
    app, plain = serve(graphs.custom_stream()), reference(graphs.custom_stream())
    inp = {"x": 0, "items": []}
    modes = ["custom", "updates"]
    assert list(app.stream(inp, thread(), stream_mode=modes)) == list(plain.stream(inp, thread(), stream_mode=modes))
    assert list(app.stream(inp, thread(), stream_mode="custom")) == [{"progress": 1}, {"progress": 2}]


def test_an_error_handler_recovers_as_in_langgraph(serve: Serve) -> None:
    app, plain = serve(graphs.with_error_handler()), reference(graphs.with_error_handler())
    inp = {"x": 0, "items": []}
    assert app.invoke(inp, thread()) == plain.invoke(inp, thread())
    assert sorted(map(repr, app.stream(inp, thread(), stream_mode="updates"))) == sorted(
        map(repr, plain.stream(inp, thread(), stream_mode="updates"))
    )


def test_two_invokes_at_once_on_one_thread_run_in_turn(serve: Serve) -> None:
    import threading

    app = serve(graphs.chat())
    cfg = thread()
    outputs: dict[str, Any] = {}

    def send(text: str) -> None:
        outputs[text] = app.invoke({"messages": [HumanMessage(text)]}, cfg)

    senders = [threading.Thread(target=send, args=(text,)) for text in ("one", "two", "three")]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    # each run saw every earlier run's messages: lengths 2, 4, 6 in the order the runs were queued
    by_length = sorted(outputs.values(), key=lambda out: len(out["messages"]))
    assert [len(out["messages"]) for out in by_length] == [2, 4, 6]
    final = [m.content for m in by_length[-1]["messages"]]
    assert final[1::2] == [f"echo {2 * i + 1}: {final[2 * i]}" for i in range(3)]
    assert sorted(final[0::2]) == ["one", "three", "two"]


def test_stream_yields_each_superstep_before_the_run_ends(serve: Serve) -> None:
    import threading

    gate = threading.Event()
    app = serve(graphs.gated(gate))
    received = []
    for chunk in app.stream({"x": 0, "items": []}, thread(), stream_mode="updates"):
        received.append(chunk)
        gate.set()  # "second" may finish only once "first"'s update has reached the client
    assert received == [{"first": {"items": ["first"]}}, {"second": {"items": ["second"]}}]
    assert graphs.CALLS["opened"] == 1 and graphs.CALLS["timed out"] == 0


def test_nodes_see_the_runs_configurable_keys_and_context(serve: Serve) -> None:
    app, plain = serve(graphs.configured()), reference(graphs.configured())
    cfg, ref_cfg = thread(), thread()
    cfg["configurable"]["tenant"] = ref_cfg["configurable"]["tenant"] = "acme"
    context = graphs.UserContext(user="ada")
    got = app.invoke({"x": 0, "items": []}, cfg, context=context)
    assert got == plain.invoke({"x": 0, "items": []}, ref_cfg, context=context)
    assert got["items"] == ["acme", "ada"]


def test_the_orchestrator_refuses_a_bad_resume_the_client_let_through(serve: Serve, monkeypatch: Any) -> None:
    from durabletask.extensions.langgraph import _requests

    app = serve(graphs.approvals())
    cfg = thread()
    first = app.invoke({"x": 0, "items": []}, cfg)
    monkeypatch.setattr(_requests, "check_resume_locally", lambda *args: None)  # as if sent by an older client
    with pytest.raises(ResumeRejectedError, match="0" * 32):
        app.invoke(Command(resume={"0" * 32: "?"}), cfg)
    with pytest.raises(ResumeRejectedError, match="no pending interrupt"):
        app.invoke(Command(resume="x"), thread())  # a new thread: nothing waits there
    assert sorted(i.id for i in app.get_state(cfg).interrupts) == sorted(i.id for i in first["__interrupt__"])
    done = app.invoke(Command(resume={i.id: "ok" for i in first["__interrupt__"]}), cfg)
    assert done["items"][-1] == "done"


def test_get_state_answers_while_a_node_runs(serve: Serve) -> None:
    import threading

    gate, started = threading.Event(), threading.Event()
    app = serve(graphs.gated(gate, started))
    cfg = thread()
    outputs: list[Any] = []
    runner = threading.Thread(target=lambda: outputs.append(app.invoke({"x": 0, "items": []}, cfg)))
    runner.start()
    try:
        assert started.wait(60)
        during = app.get_state(cfg)  # answered from the last finished superstep, while "second" still runs
        assert (during.values, during.next) == ({"x": 0, "items": ["first"]}, ("second",))
    finally:
        gate.set()
        runner.join()
    assert outputs == [{"x": 0, "items": ["first", "second"]}]
    assert graphs.CALLS["opened"] == 1 and graphs.CALLS["timed out"] == 0


def test_async_nodes_run_as_with_ainvoke(serve: Serve) -> None:
    import asyncio

    app, plain = serve(graphs.async_nodes()), reference(graphs.async_nodes())
    inp = {"x": 1, "items": []}
    assert (
        app.invoke(inp, thread())
        == asyncio.run(plain.ainvoke(inp, thread()))
        == {
            "x": 2,
            "items": ["fetched", "sync 2"],
        }
    )


@pytest.mark.parametrize("mode", ["tasks", "checkpoints", "debug"])
def test_the_loops_other_stream_modes_have_langgraphs_chunks(serve: Serve, mode: str) -> None:
    app, plain = serve(graphs.fan_out()), reference(graphs.fan_out())
    inp = {"x": 2, "items": []}

    def shape(chunk: Any) -> Any:  # ids and times differ between two runs
        keys = sorted(chunk)
        return keys, chunk.get("name"), chunk.get("type"), chunk.get("step"), chunk.get("next")

    durable = [shape(c) for c in app.stream(inp, thread(), stream_mode=mode)]
    assert sorted(map(repr, durable)) == sorted(repr(shape(c)) for c in plain.stream(inp, thread(), stream_mode=mode))
    assert durable


def test_an_async_nodes_timeout_fails_the_run_as_in_langgraph(serve: Serve) -> None:
    import asyncio

    from langgraph.errors import NodeTimeoutError

    app = serve(graphs.timed_out())
    with pytest.raises(NodeTimeoutError, match="'stuck' exceeded its run timeout"):
        asyncio.run(reference(graphs.timed_out()).ainvoke({"x": 0, "items": []}, thread()))
    with pytest.raises(GraphRunError) as caught:
        app.invoke({"x": 0, "items": []}, thread())
    assert caught.value.error_type == "langgraph.errors.NodeTimeoutError"
    assert "'stuck' exceeded its run timeout of 0.200s" in caught.value.error_message
