"""get_state / get_state_history / update_state give LangGraph's own snapshots; forks and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Command

from durabletask.extensions.langgraph import (
    DurableGraph,
    GraphMismatchError,
    GraphNotRegisteredError,
    MissingThreadIdError,
    StateSerializationError,
    register_graph,
)
from tests.e2e.conftest import Hub
from tests.e2e.langgraph import graphs
from tests.e2e.langgraph.conftest import Serve, reference, thread


def _view(snapshot: Any) -> tuple[Any, ...]:
    """What two runs of one graph share in a snapshot (ids and times differ)."""
    return (
        snapshot.values,
        snapshot.next,
        snapshot.metadata.get("step"),
        snapshot.metadata.get("source"),
        [(t.name, t.path, t.error, [i.value for i in t.interrupts]) for t in snapshot.tasks],
        [i.value for i in snapshot.interrupts],
    )


def test_state_and_history_equal_langgraphs(serve: Serve) -> None:
    app, plain = serve(graphs.approvals()), reference(graphs.approvals())
    cfg, ref_cfg = thread(), thread()
    app.invoke({"x": 0, "items": []}, cfg)
    plain.invoke({"x": 0, "items": []}, ref_cfg)
    assert _view(app.get_state(cfg)) == _view(plain.get_state(ref_cfg))
    history = list(app.get_state_history(cfg))
    assert [_view(s) for s in history] == [_view(s) for s in plain.get_state_history(ref_cfg)]
    assert [_view(s) for s in app.get_state_history(cfg, limit=2)] == [_view(s) for s in history[:2]]


def test_update_state_as_a_node_then_continue(serve: Serve) -> None:
    app, plain = serve(graphs.linear(), interrupt_before=["c"]), reference(graphs.linear(), interrupt_before=["c"])
    cfg, ref_cfg = thread(), thread()
    assert app.invoke({"x": 1, "items": []}, cfg) == plain.invoke({"x": 1, "items": []}, ref_cfg)
    assert app.get_state(cfg).next == ("c",)
    new_config = app.update_state(cfg, {"x": 100, "items": ["edited"]}, as_node="b")
    plain.update_state(ref_cfg, {"x": 100, "items": ["edited"]}, as_node="b")
    assert new_config["configurable"]["checkpoint_id"] == app.get_state(cfg).config["configurable"]["checkpoint_id"]
    assert _view(app.get_state(cfg)) == _view(plain.get_state(ref_cfg))
    assert app.invoke(None, cfg) == plain.invoke(None, ref_cfg)


def test_interrupt_after_and_resume_with_none(serve: Serve) -> None:
    app, plain = serve(graphs.linear(), interrupt_after=["a"]), reference(graphs.linear(), interrupt_after=["a"])
    cfg, ref_cfg = thread(), thread()
    assert app.invoke({"x": 2, "items": []}, cfg) == plain.invoke({"x": 2, "items": []}, ref_cfg)
    assert app.invoke(None, cfg) == plain.invoke(None, ref_cfg)


def test_a_run_from_an_earlier_checkpoint_forks(serve: Serve) -> None:
    app, plain = serve(graphs.linear()), reference(graphs.linear())
    cfg, ref_cfg = thread(), thread()
    app.invoke({"x": 1, "items": []}, cfg)
    plain.invoke({"x": 1, "items": []}, ref_cfg)
    # the checkpoint before "b" ran, in both histories (newest first: c-done, b-done, a-done, input, start)
    fork = list(app.get_state_history(cfg))[2]
    ref_fork = list(plain.get_state_history(ref_cfg))[2]
    assert fork.next == ref_fork.next == ("b",)
    assert app.invoke(None, fork.config) == plain.invoke(None, ref_fork.config)
    assert [_view(s) for s in app.get_state_history(cfg)] == [_view(s) for s in plain.get_state_history(ref_cfg)]


def test_interrupt_before_then_command_update(serve: Serve) -> None:
    app = serve(graphs.linear(), interrupt_before=["b"])
    plain = reference(graphs.linear(), interrupt_before=["b"])
    cfg, ref_cfg = thread(), thread()
    assert app.invoke({"x": 1, "items": []}, cfg) == plain.invoke({"x": 1, "items": []}, ref_cfg)
    assert app.invoke(Command(update={"x": 50}), cfg) == plain.invoke(Command(update={"x": 50}), ref_cfg)


def test_a_missing_thread_id_is_refused(serve: Serve) -> None:
    app = serve(graphs.linear())
    with pytest.raises(MissingThreadIdError, match="thread_id"):
        app.invoke({"x": 1, "items": []}, {"configurable": {}})
    with pytest.raises(MissingThreadIdError, match="thread_id"):
        app.get_state({})


def test_a_state_the_serializer_cannot_write_is_refused(serve: Serve) -> None:
    app = serve(graphs.linear())
    with pytest.raises(StateSerializationError, match="cannot be serialized"):
        app.invoke({"x": 1, "items": [object()]}, thread())


def test_a_graph_no_worker_registered_is_a_clear_error(hub: Hub) -> None:
    hub.worker().start()
    app = DurableGraph(hub.client(), "nobody", graphs.linear().compile(), start_timeout=1.0)
    with pytest.raises(GraphNotRegisteredError, match="nobody"):
        app.invoke({"x": 1, "items": []}, thread())


def test_a_different_graph_is_refused(hub: Hub) -> None:
    worker = hub.worker()
    register_graph(worker, "shape", graphs.linear().compile())
    worker.start()
    cfg = thread()
    assert DurableGraph(hub.client(), "shape", graphs.linear().compile()).invoke({"x": 1, "items": []}, cfg)
    other = DurableGraph(hub.client(), "shape", graphs.cycle().compile())
    with pytest.raises(GraphMismatchError, match="differs"):
        other.invoke({"x": 1, "items": []}, cfg)  # checked against the thread's published fingerprint
    with pytest.raises(GraphMismatchError, match="differs"):
        other.invoke({"x": 1, "items": []}, thread())  # a new thread: the orchestrator checks it


def test_register_graph_refuses_bad_arguments(hub: Hub) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    worker = hub.worker()
    with pytest.raises(ValueError, match="checkpointer"):
        register_graph(worker, "g", graphs.linear().compile(checkpointer=InMemorySaver()))
    with pytest.raises(ValueError, match="no node named zz"):
        register_graph(worker, "g", graphs.linear().compile(), nodes=["a", "zz"])
    with pytest.raises(ValueError, match="without ':'"):
        register_graph(worker, "a:b", graphs.linear().compile())


async def test_the_async_client_runs_the_same_graph(hub: Hub) -> None:
    worker = hub.worker()
    register_graph(worker, "aio", graphs.approvals().compile())
    worker.start()
    client = hub.async_client()
    try:
        app = DurableGraph(client, "aio", graphs.approvals().compile())
        cfg = thread()
        first = await app.ainvoke({"x": 0, "items": []}, cfg)
        ids = [i.id for i in first["__interrupt__"]]
        assert [i.id for i in (await app.aget_state(cfg)).interrupts] == ids
        chunks = [c async for c in app.astream(Command(resume=dict.fromkeys(ids, "ok")), cfg, stream_mode="updates")]
        assert chunks[-1] == {"done": {"items": ["done"]}}
        history = [s async for s in app.aget_state_history(cfg)]
        assert history[0].next == () and history[0].values["items"][-1] == "done"
        assert history[-1].metadata["source"] == "input"
        with pytest.raises(TypeError, match="async client"):
            app.invoke({"x": 0, "items": []}, cfg)
    finally:
        await client.close()
