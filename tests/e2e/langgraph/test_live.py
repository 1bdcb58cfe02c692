"""Live delivery: a node's ``custom`` and ``messages`` chunks reach the client while the node still runs, and
results and chunks travel on the instance's durable stream, never in its custom status.

A held node waits for an event that the test sets only once it has received the node's first chunk; had the
chunk come with the node's result, the test would never receive it (the node's wait has a 60 s bound only so a
failure ends).
"""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any

import pytest
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from typing_extensions import TypedDict

from durabletask.client import OrchestrationStatus
from durabletask.extensions.langgraph import DurableGraph, GraphRunError, _requests, instance_id, register_graph
from tests.e2e.conftest import Hub
from tests.e2e.langgraph.conftest import Serve, reference, thread
from tests.support.langgraph_tokens import TokenModel
from tests.support.langgraph_trace import norm

RELEASE = threading.Event()
WAITED: list[bool] = []  # what each held wait returned: True once the test released it


@pytest.fixture(autouse=True)
def _held() -> Any:
    RELEASE.clear()
    WAITED.clear()
    yield
    RELEASE.set()  # a failed test never leaves a node waiting


def _hold(_index: int = 0) -> None:
    WAITED.append(RELEASE.wait(60))


class Steps(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def held_writer() -> StateGraph[Any]:
    """``before``, then ``talk``, which writes a custom chunk, waits to be released, writes another."""

    def before(s: Steps) -> dict[str, Any]:
        return {"log": ["before"]}

    def talk(s: Steps) -> dict[str, Any]:
        write = get_stream_writer()
        write({"said": "first"})
        _hold()
        write({"said": "second"})
        return {"x": s["x"] + 1, "log": ["talk"]}

    b = StateGraph(Steps)
    b.add_node("before", before)
    b.add_node("talk", talk)
    b.add_edge(START, "before")
    b.add_edge("before", "talk")
    b.add_edge("talk", END)
    return b


def held_model() -> StateGraph[Any]:
    """One node calling a model that streams "Hel", waits to be released, then streams "lo"."""
    model = TokenModel(between=_hold)

    def speak(s: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(s["messages"])]}

    b = StateGraph(MessagesState)
    b.add_node("speak", speak)
    b.add_edge(START, "speak")
    b.add_edge("speak", END)
    return b


def test_custom_chunks_arrive_while_their_node_runs(serve: Serve) -> None:
    app = serve(held_writer())
    chunks = app.stream({"x": 0, "log": []}, thread(), stream_mode="custom")
    assert next(chunks) == {"said": "first"}
    assert WAITED == [], "the node is still waiting"
    RELEASE.set()
    assert list(chunks) == [{"said": "second"}]
    assert WAITED == [True]


def test_model_tokens_arrive_one_by_one_while_their_node_runs(serve: Serve) -> None:
    app = serve(held_model())
    chunks = app.stream({"messages": [("user", "hi")]}, thread(), stream_mode="messages")
    token, metadata = next(chunks)
    assert (token.content, metadata["langgraph_node"]) == ("Hel", "speak")
    assert "durabletask_attempt" not in metadata, "a first attempt's chunks are LangGraph's own"
    assert WAITED == []
    RELEASE.set()
    rest = [t.content for t, _ in chunks]
    plain = reference(held_model()).stream({"messages": [("user", "hi")]}, thread(), stream_mode="messages")
    assert ["Hel", *rest] == [t.content for t, _ in plain] and rest[0] == "lo"


def test_live_chunks_keep_plain_langgraphs_order_among_the_loops_chunks(serve: Serve) -> None:
    RELEASE.set()  # nothing held: the order alone is compared
    app = serve(held_writer())
    modes = ["updates", "custom", "values", "tasks"]
    durable = list(app.stream({"x": 0, "log": []}, thread(), stream_mode=modes))
    plain = list(reference(held_writer()).stream({"x": 0, "log": []}, thread(), stream_mode=modes))
    assert [(mode, _comparable(chunk)) for mode, chunk in durable] == [(m, _comparable(c)) for m, c in plain]


def _comparable(chunk: Any) -> Any:
    # A "tasks" chunk carries the task's ID, which derives from the checkpoint ID (different on each side).
    return norm({k: v for k, v in chunk.items() if k != "id"} if isinstance(chunk, dict) else chunk)


async def test_astream_delivers_tokens_while_their_node_runs(hub: Hub) -> None:
    name = "livetokens"
    worker = hub.worker()
    register_graph(worker, name, held_model().compile())
    worker.start()
    client = hub.async_client()
    try:
        app = DurableGraph(client, name, held_model().compile())
        chunks = app.astream({"messages": [("user", "hi")]}, thread(), stream_mode="messages")
        first, _ = await anext(chunks)
        assert WAITED == []
        RELEASE.set()
        tokens = [first.content] + [token.content async for token, _ in chunks]
    finally:
        await client.close()
    assert tokens[:2] == ["Hel", "lo"] and not "".join(tokens[2:])
    assert WAITED == [True]


class Big(TypedDict):
    text: str
    n: int


def big_state() -> StateGraph[Any]:
    def grow(s: Big) -> dict[str, Any]:
        return {"text": "x" * 400_000, "n": s["n"] + 1}

    b = StateGraph(Big)
    b.add_node("grow", grow)
    b.add_edge(START, "grow")
    b.add_edge("grow", END)
    return b


def test_a_result_far_over_the_custom_status_limit_comes_whole_with_the_status_unused(serve: Serve, hub: Hub) -> None:
    app = serve(big_state())
    # The longest instance ID DTS takes (100 characters): its stream's entities get shortened keys.
    cfg = thread("t" * (100 - len(f"lg:{app.name}:")))
    out = app.invoke({"text": "", "n": 0}, cfg)
    assert out == {"text": "x" * 400_000, "n": 1}
    # The values stream's chunks are as large; they come whole too.
    inp = {"text": "", "n": 0}
    streamed = list(app.stream(inp, thread(), stream_mode="values"))
    assert streamed == list(reference(big_state()).stream(inp, thread(), stream_mode="values"))
    state = hub.client().get_orchestration_state(instance_id(app.name, cfg["configurable"]["thread_id"]))
    assert state is not None and state.serialized_custom_status is not None
    # The status names the graph and the pending interrupts only: far below the 16 KB other backends allow.
    assert len(state.serialized_custom_status) < 1_000, state.serialized_custom_status[:200]
    assert app.get_state(cfg).values == out


def test_a_client_that_reads_results_in_the_custom_status_is_still_answered_there(
    serve: Serve, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a client from before durable streams asks (its requests do not say "via": "stream").
    monkeypatch.setattr(_requests, "ASK_FOR_STREAM", False)
    RELEASE.set()
    app = serve(held_writer())
    cfg = thread()
    assert app.invoke({"x": 0, "log": []}, cfg) == {"x": 1, "log": ["before", "talk"]}
    assert list(app.stream({"x": 0, "log": []}, thread(), stream_mode="custom")) == [
        {"said": "first"},
        {"said": "second"},
    ]
    state = hub.client().get_orchestration_state(instance_id(app.name, cfg["configurable"]["thread_id"]))
    assert state is not None
    [(_request_id, answer)] = state.get_custom_status()["done"]
    assert answer.keys() == {"output"}


class _CountingClient:
    """The hub's client, counting the reads of instance status a DurableGraph makes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.status_reads = 0

    def get_orchestration_state(self, *args: Any, **kwargs: Any) -> Any:
        self.status_reads += 1
        return self.inner.get_orchestration_state(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_request_waits_on_its_subscription_without_reading_the_status_again(hub: Hub) -> None:
    name = "livewait"
    worker = hub.worker()
    register_graph(worker, name, held_writer().compile())
    worker.start()
    counting = _CountingClient(hub.client())
    app = DurableGraph(counting, name, held_writer().compile())
    cfg = thread()
    chunks = app.stream({"x": 0, "log": []}, cfg, stream_mode="custom")
    assert next(chunks) == {"said": "first"}
    RELEASE.set()
    assert list(chunks) == [{"said": "second"}]
    # One read before the request is sent; the wait itself is the subscription's (a status poll would read on).
    assert counting.status_reads == 1
    app.invoke(None, cfg)
    assert counting.status_reads == 2


@pytest.mark.parametrize("length", [64, 65, 100])
def test_threads_of_any_instance_id_length_use_the_stream(
    serve: Serve, hub: Hub, length: int
) -> None:
    RELEASE.set()
    app = serve(held_writer())
    prefix = f"lg:{app.name}:"
    cfg = thread("t" * (length - len(prefix)))
    iid = instance_id(app.name, cfg["configurable"]["thread_id"])
    assert len(iid) == length
    assert list(app.stream({"x": 0, "log": []}, cfg, stream_mode="custom")) == [{"said": "first"}, {"said": "second"}]
    state = hub.client().get_orchestration_state(iid)
    assert state is not None
    # Instance IDs over 64 characters get shortened stream keys, so every thread is answered on its stream.
    assert not state.get_custom_status()["done"]


FAILURES: list[str] = []


def big_then_failing() -> StateGraph[Any]:
    """``grow`` writes 150 KB; ``check`` raises on its first run in this process, then passes."""

    def grow(s: Big) -> dict[str, Any]:
        return {"text": "y" * 150_000, "n": 1}

    def check(s: Big) -> dict[str, Any]:
        if not FAILURES:
            FAILURES.append("check")
            raise RuntimeError("not yet")
        return {"n": s["n"] + 1}

    b = StateGraph(Big)
    b.add_node("grow", grow)
    b.add_node("check", check)
    b.add_edge(START, "grow")
    b.add_edge("grow", "check")
    b.add_edge("check", END)
    return b


def test_a_failed_runs_large_checkpoints_stay_readable_with_the_status_unused(serve: Serve, hub: Hub) -> None:
    FAILURES.clear()
    app = serve(big_then_failing())
    cfg = thread()
    with pytest.raises(GraphRunError, match="not yet"):
        app.invoke({"text": "", "n": 0}, cfg)
    state = hub.client().get_orchestration_state(instance_id(app.name, cfg["configurable"]["thread_id"]))
    assert state is not None and state.runtime_status == OrchestrationStatus.FAILED
    assert state.serialized_custom_status is not None and len(state.serialized_custom_status) < 1_000
    # The failed run's checkpoints (kept on the stream) give the state view, and the next run starts from them.
    failed = app.get_state(cfg)
    assert (failed.values["n"], failed.next) == (1, ("check",))
    assert [t.error for t in failed.tasks] == ["RuntimeError('not yet')"]
    assert app.invoke(None, cfg) == {"text": "y" * 150_000, "n": 2}
