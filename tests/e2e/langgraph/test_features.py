"""Node pinning over work-item filters, subgraphs, prebuilt agents, the messages stream, continue-as-new."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from durabletask.extensions.langgraph import DurableGraph, _orchestrator, register_graph
from tests.e2e.conftest import Hub
from tests.e2e.langgraph import graphs
from tests.e2e.langgraph.conftest import Serve, reference, thread


def test_a_node_registered_on_one_worker_only_runs_there(hub: Hub) -> None:
    name = f"pin{uuid.uuid4().hex[:6]}"
    general = hub.worker()
    register_graph(general, name, graphs.pinned("general").compile(), nodes=["cpu"])
    general.use_work_item_filters()
    special = hub.worker()
    register_graph(special, name, graphs.pinned("special").compile(), nodes=["gpu"], orchestrator=False)
    special.use_work_item_filters()
    general.start()
    special.start()
    app = DurableGraph(hub.client(), name, graphs.pinned("client").compile())
    for _ in range(3):
        assert app.invoke({"x": 0, "items": []}, thread())["items"] == ["cpu", "gpu"]
    assert graphs.CALLS == {"cpu@general": 3, "gpu@special": 3}


def test_a_subgraph_node_runs_inside_its_task(serve: Serve) -> None:
    app, plain = serve(graphs.with_subgraph()), reference(graphs.with_subgraph())
    inp = {"x": 1, "items": []}
    assert app.invoke(inp, thread()) == plain.invoke(inp, thread())
    assert list(app.stream(inp, thread(), stream_mode="updates")) == list(
        plain.stream(inp, thread(), stream_mode="updates")
    )


def test_create_react_agent_calls_each_tool_once(serve: Serve) -> None:
    app = serve(graphs.react_agent())
    got = app.invoke({"messages": [HumanMessage("weather in Oslo?")]}, thread())
    expected = graphs.react_agent().invoke({"messages": [HumanMessage("weather in Oslo?")]})
    assert graphs.without_message_ids(got) == graphs.without_message_ids(expected)
    assert got["messages"][-1].content == "It is sunny in Oslo."
    assert graphs.CALLS["weather"] == 2  # once durably, once in plain LangGraph


def _tokens(chunks: list[Any]) -> list[tuple[str, str]]:
    return [(type(message).__name__, message.content) for message, meta in chunks]


def test_the_messages_stream_carries_the_models_tokens(serve: Serve) -> None:
    app, plain = serve(graphs.streaming_model()), reference(graphs.streaming_model())
    inp = {"messages": [HumanMessage("hi")]}
    durable = list(app.stream(inp, thread(), stream_mode="messages"))
    expected = list(plain.stream(inp, thread(), stream_mode="messages"))
    assert _tokens(durable) == _tokens(expected)
    assert len(durable) > 1
    assert all(meta["langgraph_node"] == "talk" for _, meta in durable)


def test_a_long_thread_continues_as_new_and_keeps_its_state(serve: Serve, monkeypatch: Any) -> None:
    monkeypatch.setattr(_orchestrator, "TASKS_PER_EXECUTION", 4)
    app, plain = serve(graphs.chat()), reference(graphs.chat())
    cfg, ref_cfg = thread(), thread()
    for turn in range(7):
        got = app.invoke({"messages": [HumanMessage(f"turn {turn}")]}, cfg)
        expected = plain.invoke({"messages": [HumanMessage(f"turn {turn}")]}, ref_cfg)
        assert graphs.without_message_ids(got) == graphs.without_message_ids(expected)
    # After continuing as new, the thread keeps its state and the checkpoints of its last run
    history, ref_history = list(app.get_state_history(cfg)), list(plain.get_state_history(ref_cfg))
    assert graphs.without_message_ids(app.get_state(cfg).values) == graphs.without_message_ids(
        plain.get_state(ref_cfg).values
    )
    assert 0 < len(history) < len(ref_history)
    assert [(s.metadata["step"], s.next) for s in history] == [(s.metadata["step"], s.next) for s in ref_history][
        : len(history)
    ]
    instance = app.client.get_orchestration_state(f"lg:{app.name}:{cfg['configurable']['thread_id']}")
    started = app.client.get_orchestration_history(instance.instance_id)
    assert sum(1 for e in started if type(e).__name__ == "TaskScheduledEvent") < 7


def test_a_subgraph_interrupt_resumes_inside_the_subgraph(serve: Serve) -> None:
    app, plain = serve(graphs.interrupted_subgraph()), reference(graphs.interrupted_subgraph())
    cfg, ref_cfg = thread(), thread()
    inp = {"x": 0, "items": []}
    first, ref_first = app.invoke(inp, cfg), plain.invoke(inp, ref_cfg)
    assert [i.value for i in first["__interrupt__"]] == [i.value for i in ref_first["__interrupt__"]]
    waiting, ref_waiting = app.get_state(cfg, subgraphs=True), plain.get_state(ref_cfg, subgraphs=True)
    assert waiting.tasks[0].state.values == ref_waiting.tasks[0].state.values
    assert waiting.tasks[0].state.next == ref_waiting.tasks[0].state.next == ("ask",)
    assert app.invoke(Command(resume="yes"), cfg) == plain.invoke(Command(resume="yes"), ref_cfg)
    assert graphs.CALLS["prepare"] == 2  # once durably, once in plain LangGraph: not again on resume


@pytest.mark.local_only("the client with a payload store is made for the emulator's address")
def test_states_over_the_payload_limit_go_through_the_payload_store(hub: Hub, tmp_path: Any) -> None:
    from durabletask.client import TaskHubGrpcClient
    from durabletask.payload import FilePayloadStore, FilePayloadStoreOptions

    store = FilePayloadStore(FilePayloadStoreOptions(directory=tmp_path))
    worker = hub.worker(payload_store=store)
    register_graph(worker, "big", graphs.linear().compile())
    worker.start()
    client = TaskHubGrpcClient(host_address=hub.address, metadata=hub.metadata, payload_store=store)
    try:
        app = DurableGraph(client, "big", graphs.linear().compile())
        blob = "z" * (3 * 1024 * 1024)  # over the 1 MiB a DTS payload may hold
        out = app.invoke({"x": 1, "items": [blob]}, thread())
        assert out == reference(graphs.linear()).invoke({"x": 1, "items": [blob]}, thread())
        assert any(tmp_path.rglob("*"))
    finally:
        client.close()


def test_replay_check_accepts_graph_histories_and_a_waiting_thread_under_a_changed_graph(hub: Hub) -> None:
    from langgraph.graph import START

    from durabletask.testing import ReplayChecker, Verdict, histories_from_client
    from durabletask.worker import TaskHubGrpcWorker

    worker = hub.worker()
    register_graph(worker, "checked", graphs.approvals().compile())
    worker.start()
    app = DurableGraph(hub.client(), "checked", graphs.approvals().compile())
    cfg = thread()
    first = app.invoke({"x": 0, "items": []}, cfg)
    app.invoke(Command(resume={first["__interrupt__"][0].id: "yes"}), cfg)  # one of two answered: still waiting

    def checker(builder: Any) -> ReplayChecker:
        candidate = TaskHubGrpcWorker(host_address=hub.address, metadata=hub.metadata)
        register_graph(candidate, "checked", builder.compile())
        return ReplayChecker(candidate)

    same = checker(graphs.approvals()).check(histories_from_client(hub.client()))
    assert [r.verdict for r in same.results] == [Verdict.REPLAYS]

    changed = graphs.approvals()
    changed.add_node("audit", lambda s: {"items": ["audit"]})
    changed.edges.discard((START, "plan"))
    changed.add_edge(START, "audit")
    changed.add_edge("audit", "plan")
    # A waiting thread's execution holds no graph's work (each run ends its execution), so a changed graph
    # replays it; whether it may take the thread's next request is decided then (see test_redeploy.py).
    waiting = checker(changed).check(histories_from_client(hub.client()))
    assert [r.verdict for r in waiting.results] == [Verdict.REPLAYS]


def test_a_functional_api_workflow_resumes_without_repeating_its_task_calls(serve: Serve) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    app, plain = serve(graphs.functional()), graphs.functional(InMemorySaver())
    cfg, ref_cfg = thread(), thread()
    first, ref_first = app.invoke("owls", cfg), plain.invoke("owls", ref_cfg)
    assert [i.value for i in first["__interrupt__"]] == [i.value for i in ref_first["__interrupt__"]]
    assert app.invoke(Command(resume="ok"), cfg) == plain.invoke(Command(resume="ok"), ref_cfg)
    assert graphs.CALLS["draft"] == 2  # once durably, once plain: a resumed entrypoint reuses its calls' results


def test_a_worker_with_a_changed_graph_applies_its_code_mismatch_policy(hub: Hub) -> None:
    from langgraph.graph import START

    from durabletask.extensions.langgraph import GraphRunError
    from durabletask.worker import CodeMismatchPolicy

    old = hub.worker()
    register_graph(old, "deploy", graphs.approvals().compile())
    old.start()
    app = DurableGraph(hub.client(), "deploy", graphs.approvals().compile())
    cfg = thread()
    waiting = app.invoke({"x": 0, "items": []}, cfg)
    old.stop()

    changed = graphs.approvals()
    changed.add_node("audit", lambda s: {"items": ["audit"]})
    changed.edges.discard((START, "plan"))
    changed.add_edge(START, "audit")
    changed.add_edge("audit", "plan")
    new = hub.worker()
    new.use_code_mismatch_policy(CodeMismatchPolicy.FAIL)
    register_graph(new, "deploy", changed.compile())
    new.start()
    with pytest.raises(GraphRunError) as caught:
        app.invoke(Command(resume={i.id: "ok" for i in waiting["__interrupt__"]}), cfg)
    assert "code sha256" in caught.value.error_message
    fresh = thread()  # a thread started for the new graph runs on the new worker
    assert DurableGraph(hub.client(), "deploy", changed.compile()).invoke({"x": 0, "items": []}, fresh)


def test_delta_channels_across_turns_and_continue_as_new(serve: Serve, monkeypatch: Any) -> None:
    monkeypatch.setattr(_orchestrator, "TASKS_PER_EXECUTION", 4)
    app, plain = serve(graphs.delta_channel()), reference(graphs.delta_channel())
    cfg, ref_cfg = thread(), thread()
    for turn in range(4):
        inp = {"log": [f"in{turn}"], "n": 0}
        assert app.invoke(inp, cfg) == plain.invoke(inp, ref_cfg)
    assert app.get_state(cfg).values == plain.get_state(ref_cfg).values


def test_a_functional_api_workflow_streams_each_task_call(serve: Serve) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    app, plain = serve(graphs.functional()), graphs.functional(InMemorySaver())
    durable = list(app.stream("owls", thread(), stream_mode="updates"))
    expected = list(plain.stream("owls", thread(), stream_mode="updates"))
    assert durable[:2] == expected[:2] == [{"draft": "essay on owls"}, {"polish": "ESSAY ON OWLS"}]
    assert [i.value for i in durable[2]["__interrupt__"]] == [i.value for i in expected[2]["__interrupt__"]]


def test_nodes_use_the_store_the_workers_graph_was_compiled_with(hub: Hub) -> None:
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    worker = hub.worker()
    register_graph(worker, "memory", graphs.remembering().compile(store=store))
    worker.start()
    app = DurableGraph(hub.client(), "memory", graphs.remembering().compile())
    assert [app.invoke({"x": 0, "items": []}, thread())["items"] for _ in range(3)] == [[1], [2], [3]]
    assert store.get(("notes",), "count").value == {"n": 3}


def test_a_cache_policy_uses_the_cache_of_the_workers_graph(hub: Hub) -> None:
    from langgraph.cache.memory import InMemoryCache

    worker_graph = graphs.cached_node()
    worker = hub.worker()
    register_graph(worker, "cached", worker_graph.compile(cache=InMemoryCache()))
    worker.start()
    app = DurableGraph(hub.client(), "cached", graphs.cached_node().compile())
    plain_graph = graphs.cached_node()
    plain = plain_graph.compile(checkpointer=InMemorySaver(), cache=InMemoryCache())
    inp = {"x": 3, "items": []}
    for _ in range(2):
        assert list(app.stream(inp, thread(), stream_mode="updates")) == list(
            plain.stream(inp, thread(), stream_mode="updates")
        )
    assert graphs.CALLS[f"expensive-{id(worker_graph)}"] == graphs.CALLS[f"expensive-{id(plain_graph)}"] == 1


@pytest.mark.parametrize("mode", ["updates", ["updates", "values"]])
def test_stream_with_subgraphs_yields_the_subgraphs_chunks_with_their_namespaces(serve: Serve, mode: Any) -> None:
    app, plain = serve(graphs.with_subgraph()), reference(graphs.with_subgraph())
    inp = {"x": 1, "items": []}

    def shape(chunk: Any) -> Any:  # a namespace names the task ("sub:<task id>"): ids differ between runs
        return (tuple(part.split(":")[0] for part in chunk[0]), *chunk[1:])

    durable = [shape(c) for c in app.stream(inp, thread(), stream_mode=mode, subgraphs=True)]
    expected = [shape(c) for c in plain.stream(inp, thread(), stream_mode=mode, subgraphs=True)]
    assert sorted(map(repr, durable)) == sorted(map(repr, expected))
    assert any(ns == ("sub",) for ns, *_ in durable)
