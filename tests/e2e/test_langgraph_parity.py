"""Every graph of the LangGraph parity corpus gives, through DurableGraph, what plain LangGraph gives.

The reference side is the same graph compiled with an ``InMemorySaver``, run in this process on the same inputs.
Compared, after normalisation (message, interrupt and checkpoint IDs and times left out): the invoke result of
each turn (or the exception's type and message), the stream chunks of each stream mode, ``get_state`` and
``get_state_history``, and how many times each node ran. The worker runs in this process (its activities count
in the corpus' tally), once with extended sessions and once replaying every turn from the full history.
"""

from __future__ import annotations

import operator
import threading
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, StateSnapshot
from typing_extensions import TypedDict

from durabletask import client
from durabletask._worker.session_cache import ExtendedSessionOptions
from durabletask.client import OrchestrationStatus
from durabletask.extensions.langgraph import (
    DurableGraph,
    GraphRunError,
    ResumeRejectedError,
    instance_id,
    register_graph,
)
from durabletask.payload import FilePayloadStore
from tests.e2e.conftest import Hub
from tests.support.langgraph_corpus import CASES, build_large_state
from tests.support.langgraph_corpus_interactive import build_async_nodes
from tests.support.langgraph_trace import TALLY, Case, Trace, canon, mode_key, norm, run, snapshot, thread_config

FULL_REPLAY = ExtendedSessionOptions(max_cached_orchestrations=0)
FULL_REPLAY_WHY = "turns extended sessions off through our worker's own option"
BY_NAME = {c.name: c for c in CASES}
_references: dict[str, Trace] = {}


def reference(case: Case) -> Trace:
    """Plain LangGraph's trace of ``case``, computed once per session."""
    if case.name not in _references:
        _references[case.name] = run(case, case.build(InMemorySaver()))
    return _references[case.name]


def durable_app(hub: Hub, case: Case, **worker_options: Any) -> DurableGraph:
    """A worker serving ``case``'s graph and a DurableGraph on a separate, identical build of it."""
    w = hub.worker(**worker_options)
    register_graph(w, case.name, case.build(None))
    w.start()
    return DurableGraph(hub.client(), case.name, case.build(None))


def chunks(case: Case, turn_chunks: list[Any]) -> Any:
    return canon(turn_chunks) if case.parallel else turn_chunks


def assert_same(case: Case, durable: Trace, plain: Trace) -> None:
    assert durable.outputs == plain.outputs, "invoke results differ"
    assert durable.counts == plain.counts, "nodes ran a different number of times under invoke"
    assert durable.state == plain.state, "get_state differs"
    assert durable.history == plain.history, "get_state_history differs"
    for mode in case.stream_modes:
        key = mode_key(mode)
        got = [chunks(case, t) for t in durable.streams[key]]
        want = [chunks(case, t) for t in plain.streams[key]]
        assert got == want, f"stream_mode={mode!r} chunks differ"
        assert durable.stream_counts[key] == plain.stream_counts[key], f"node runs differ under stream {mode!r}"


def test_the_corpus_covers_at_least_twenty_graphs_and_each_turn_kind() -> None:
    assert len(CASES) >= 20
    assert len({c.name for c in CASES}) == len(CASES)
    # The reference side really did something: every case ran nodes and most produced state.
    for case in CASES:
        assert reference(case).counts, f"{case.name}: no node ran under plain LangGraph"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_durable_graph_matches_plain_langgraph(hub: Hub, case: Case) -> None:
    assert_same(case, run(case, durable_app(hub, case)), reference(case))


@pytest.mark.emulator_internals(FULL_REPLAY_WHY)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_durable_graph_matches_plain_langgraph_replaying_every_turn(hub: Hub, case: Case) -> None:
    assert_same(case, run(case, durable_app(hub, case, extended_sessions=FULL_REPLAY)), reference(case))


@pytest.mark.emulator_internals(FULL_REPLAY_WHY)
def test_interrupt_ids_are_the_same_before_and_after_a_full_replay(hub: Hub) -> None:
    case = BY_NAME["parallel_interrupts_by_id"]
    app = durable_app(hub, case, extended_sessions=FULL_REPLAY)
    config = thread_config(case)
    first = app.invoke(case.turns[0], config)
    ids = sorted(i.id for i in first["__interrupt__"])
    assert len(set(ids)) == 3
    # Each look at the state re-drives the thread from its history; the IDs must not move.
    assert sorted(i.id for i in app.get_state(config).interrupts) == ids
    assert sorted(i.id for i in app.get_state(config).interrupts) == ids


def test_each_parallel_interrupt_gets_its_own_value_by_id(hub: Hub) -> None:
    case = BY_NAME["parallel_interrupts_by_id"]
    app = durable_app(hub, case)
    config = thread_config(case)
    pending = app.invoke(case.turns[0], config)["__interrupt__"]
    answers = {i.id: f"answer to {i.value['question']}" for i in pending}
    out = app.invoke(Command(resume=answers), config)
    assert sorted(out["answers"]) == sorted(f"{q} -> answer to {q}" for q in ("tea", "coffee", "water"))


def test_a_resume_naming_an_unknown_interrupt_is_refused_and_the_thread_keeps_waiting(hub: Hub) -> None:
    case = BY_NAME["interrupt"]
    app = durable_app(hub, case)
    config = thread_config(case)
    pending = app.invoke(case.turns[0], config)["__interrupt__"]
    # An interrupt ID of the right form that is not pending (LangGraph takes a map only when every key is one).
    unknown = "0" * 32
    with pytest.raises(ResumeRejectedError, match=unknown):
        app.invoke(Command(resume={unknown: "approved"}), config)
    assert [i.id for i in app.get_state(config).interrupts] == [pending[0].id]
    out = app.invoke(Command(resume={pending[0].id: "approved"}), config)
    assert out["status"] == "decision: approved, published"


def test_a_resume_when_nothing_waits_is_refused(hub: Hub) -> None:
    case = BY_NAME["linear"]
    app = durable_app(hub, case)
    config = thread_config(case)
    app.invoke(case.turns[0], config)
    with pytest.raises(ResumeRejectedError, match="no pending interrupt"):
        app.invoke(Command(resume="yes"), config)
    assert norm(app.get_state(config).values) == reference(case).state["values"]


def test_a_fork_from_an_earlier_checkpoint_gives_what_plain_langgraph_gives(hub: Hub) -> None:
    case = BY_NAME["command_goto"]
    plain = case.build(InMemorySaver())
    app = durable_app(hub, case)
    results = []
    for side in (plain, app):
        config = thread_config(case)
        side.invoke(case.turns[0], config)
        side.invoke(case.turns[1], config)
        history = list(side.get_state_history(config))
        # Back to the checkpoint before the second run's decision, then on from there with no new input.
        fork_from = next(s for s in history if s.next == ("decide",) and s.metadata["step"] > 2)
        forked = side.invoke(None, fork_from.config)
        results.append((norm(forked), [norm(s.values) for s in side.get_state_history(config)]))
    assert results[0] == results[1]


def test_get_state_with_subgraphs_while_a_subgraph_waits_gives_what_plain_langgraph_gives(hub: Hub) -> None:
    case = BY_NAME["subgraph_interrupt"]
    plain = case.build(InMemorySaver())
    app = durable_app(hub, case)
    seen = []
    for side in (plain, app):
        config = thread_config(case)
        side.invoke(case.turns[0], config)
        state = side.get_state(config, subgraphs=True)
        assert isinstance(state.tasks[0].state, StateSnapshot), "the waiting subgraph's own snapshot"
        seen.append(snapshot(state))
    assert seen[0] == seen[1]


@pytest.mark.local_only("the client with a payload store is made for the emulator's address")
def test_a_state_past_the_payload_cap_goes_through_the_payload_store(hub: Hub, tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path / "payloads")
    w = hub.worker(payload_store=store)
    register_graph(w, "large", build_large_state(None))
    w.start()
    c = client.TaskHubGrpcClient(host_address=hub.address, metadata=hub.metadata, payload_store=store)
    try:
        config = {"configurable": {"thread_id": "large"}}
        TALLY.reset()
        out = DurableGraph(c, "large", build_large_state(None)).invoke({"chunks": [], "size": 0}, config)
        durable_counts = TALLY.snapshot()
    finally:
        c.close()
    TALLY.reset()
    plain = build_large_state(InMemorySaver()).invoke({"chunks": [], "size": 0}, config)
    assert out == plain and out["size"] == 4_500_000
    assert durable_counts == TALLY.snapshot() == {"large.grow": 3, "large.measure": 1}
    assert any((tmp_path / "payloads").rglob("*")), "nothing went through the payload store"


class Steps(TypedDict):
    done: Annotated[list[str], operator.add]


def build_held(release: threading.Event) -> Any:
    """``first``, then ``held``, which waits for ``release`` (at most 60 s) and says whether it came."""

    def first(s: Steps) -> dict[str, Any]:
        return {"done": ["first"]}

    def held(s: Steps) -> dict[str, Any]:
        return {"done": ["released" if release.wait(60) else "never released"]}

    b = StateGraph(Steps)
    b.add_node("first", first)
    b.add_node("held", held)
    b.add_edge(START, "first")
    b.add_edge("first", "held")
    b.add_edge("held", END)
    return b.compile()


def test_stream_yields_a_superstep_while_the_next_one_still_runs(hub: Hub) -> None:
    release = threading.Event()
    w = hub.worker()
    register_graph(w, "held", build_held(release))
    w.start()
    app = DurableGraph(hub.client(), "held", build_held(release))
    chunks = app.stream({"done": []}, {"configurable": {"thread_id": "held"}}, stream_mode="updates")
    assert next(chunks) == {"first": {"done": ["first"]}}
    release.set()  # only now may the second node finish: its chunk can only follow
    assert list(chunks) == [{"held": {"done": ["released"]}}]


def test_get_state_history_with_limit_before_and_filter_gives_what_plain_langgraph_gives(hub: Hub) -> None:
    case = BY_NAME["command_goto"]
    plain = case.build(InMemorySaver())
    app = durable_app(hub, case)
    seen = []
    for side in (plain, app):
        config = thread_config(case)
        for turn in case.turns:
            side.invoke(turn, config)
        everything = list(side.get_state_history(config))
        seen.append(
            [
                [snapshot(s) for s in side.get_state_history(config, limit=3)],
                [snapshot(s) for s in side.get_state_history(config, before=everything[2].config)],
                [snapshot(s) for s in side.get_state_history(config, filter={"source": "input"})],
            ]
        )
    assert seen[0] == seen[1]
    assert [len(part) for part in seen[0]] == [3, len(everything) - 3, 2]


@pytest.mark.parametrize("name", ["subgraph", "subgraph_interrupt"])
def test_stream_with_subgraphs_gives_what_plain_langgraph_gives(hub: Hub, name: str) -> None:
    case = BY_NAME[name]
    plain = case.build(InMemorySaver())
    app = durable_app(hub, case)
    seen = []
    for side in (plain, app):
        config = thread_config(case)
        turns = []
        for turn in case.turns:
            chunks = side.stream(turn, config, stream_mode="updates", subgraphs=True)
            # A namespace names each subgraph's task by node and task ID; the IDs differ between the sides.
            turns.append([[[part.split(":")[0] for part in ns], norm(chunk)] for ns, chunk in chunks])
        seen.append(turns)
    assert seen[0] == seen[1]
    assert any(ns for turn in seen[0] for ns, _ in turn), "no chunk came from inside the subgraph"


def test_update_state_as_a_node_gives_what_plain_langgraph_gives(hub: Hub) -> None:
    case = BY_NAME["interrupt_before"]
    plain = case.build(InMemorySaver())
    app = durable_app(hub, case)
    seen = []
    for side in (plain, app):
        config = thread_config(case)
        side.invoke(case.turns[0], config)
        side.update_state(config, {"draft": "a better plan"}, as_node="plan")
        TALLY.reset()
        out = side.invoke(None, config)
        seen.append((norm(out), norm(side.get_state(config).values), TALLY.snapshot()))
    assert seen[0] == seen[1]


async def test_ainvoke_and_astream_match_plain_langgraph(hub: Hub) -> None:
    case = BY_NAME["interrupt"]
    w = hub.worker()
    register_graph(w, case.name, case.build(None))
    w.start()
    async with hub.async_client() as c:
        app = DurableGraph(c, case.name, case.build(None))
        config = thread_config(case)
        outputs = [norm(await app.ainvoke(case.turns[0], config)), norm(await app.ainvoke(case.turns[1], config))]
        assert outputs == reference(case).outputs
        config = thread_config(case)
        streamed = []
        for turn in case.turns:
            streamed.append([norm(c) async for c in app.astream(turn, config, stream_mode="updates")])
        assert streamed == reference(case).streams["updates"]


async def test_async_def_nodes_give_what_plain_langgraph_gives_under_ainvoke(hub: Hub) -> None:
    inp = {"text": "two words", "steps": []}
    plain = build_async_nodes(InMemorySaver())
    config = {"configurable": {"thread_id": "async-plain"}}
    TALLY.reset()
    want = [norm(await plain.ainvoke(inp, config)), [norm(c) async for c in plain.astream(inp, config)]]
    want_counts = TALLY.snapshot()
    w = hub.worker()
    register_graph(w, "async_nodes", build_async_nodes(None))
    w.start()
    async with hub.async_client() as c:
        app = DurableGraph(c, "async_nodes", build_async_nodes(None))
        config = {"configurable": {"thread_id": "async-durable"}}
        TALLY.reset()
        got = [norm(await app.ainvoke(inp, config)), [norm(c) async for c in app.astream(inp, config)]]
    assert got == want
    assert TALLY.snapshot() == want_counts == {"async.fetch": 2, "async.summarise": 2}


def test_the_node_that_raises_fails_the_orchestration_with_its_type_and_message(hub: Hub) -> None:
    case = BY_NAME["node_raises"]
    app = durable_app(hub, case)
    config = thread_config(case)
    with pytest.raises(GraphRunError) as raised:
        app.invoke(case.turns[0], config)
    assert (raised.value.error_type, raised.value.error_message) == ("builtins.ValueError", "order 7 has no lines")
    state = hub.client().get_orchestration_state(instance_id(case.name, config["configurable"]["thread_id"]))
    assert state is not None and state.runtime_status == OrchestrationStatus.FAILED
    assert state.failure_details is not None
    assert state.failure_details.error_type.endswith("ValueError"), state.failure_details
    assert state.failure_details.message == "order 7 has no lines"
