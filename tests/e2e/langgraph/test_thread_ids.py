"""Thread IDs on the task hub: any ID LangGraph accepts works, and no two threads share an instance."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Command

from durabletask.extensions.langgraph import DurableGraph, _requests, instance_id, register_graph
from tests.e2e.conftest import Hub
from tests.e2e.langgraph import graphs
from tests.e2e.langgraph.conftest import Serve, reference

pytestmark = pytest.mark.adversarial


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def test_non_ascii_and_control_character_thread_ids_are_threads_of_their_own(serve: Serve) -> None:
    app = serve(graphs.linear())
    threads = ["ticket-é", "用户-42", "a\nb", "a b", "~"]
    for n, thread_id in enumerate(threads):
        assert app.invoke({"x": n, "items": []}, _cfg(thread_id)) == reference(graphs.linear()).invoke(
            {"x": n, "items": []}, _cfg("ref")
        )
    for n, thread_id in enumerate(threads):
        assert app.get_state(_cfg(thread_id)).values["items"] == ["a", "b", f"c{(n + 1) * 2}"]


def test_a_thread_id_equal_to_a_hashed_tail_does_not_reach_that_thread(serve: Serve) -> None:
    app = serve(graphs.approvals())
    victim = "victim-" + "v" * 150
    asked = app.invoke({"x": 0, "items": []}, _cfg(victim))["__interrupt__"]
    # The forged ID is read off an instance listing; its thread waits too, on an instance of its own.
    forged = instance_id(app.name, victim).removeprefix(f"lg:{app.name}:")
    assert len(app.invoke({"x": 0, "items": []}, _cfg(forged))["__interrupt__"]) == 2
    done = app.invoke(Command(resume={i.id: "yes" for i in asked}), _cfg(victim))
    assert done["items"] == ["plan", "1:yes", "2:yes", "done"]
    assert instance_id(app.name, forged) != instance_id(app.name, victim)
    assert len(app.get_state(_cfg(forged)).interrupts) == 2


def test_a_thread_started_under_the_earlier_mapping_is_found_where_it_lives(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = hub.worker()
    register_graph(worker, "legacy", graphs.linear().compile())
    worker.start()
    app = DurableGraph(hub.client(), "legacy", graphs.linear().compile())
    thread_id = "order~7"
    earlier = f"lg:legacy:{thread_id}"  # the unhashed instance '~' thread IDs had before
    resolve = _requests.resolve_instance

    def earlier_mapping(graph: str, thread: str) -> Any:
        return earlier
        yield  # a plan that needs no I/O

    monkeypatch.setattr(_requests, "resolve_instance", earlier_mapping)
    app.invoke({"x": 1, "items": []}, _cfg(thread_id))
    monkeypatch.setattr(_requests, "resolve_instance", resolve)
    assert instance_id("legacy", thread_id) != earlier
    assert app.get_state(_cfg(thread_id)).values["items"] == ["a", "b", "c4"]
    assert hub.client().get_orchestration_state(instance_id("legacy", thread_id)) is None
    # A thread ID equal to another thread's instance tail is not sent there: that instance records another thread.
    long_thread = "l" * 150
    app.invoke({"x": 2, "items": []}, _cfg(long_thread))
    tail = instance_id("legacy", long_thread).removeprefix("lg:legacy:")
    assert app.get_state(_cfg(tail)).values == {}
    assert app.get_state(_cfg(long_thread)).values["items"] == ["a", "b", "c6"]


def test_a_graph_name_with_a_colon_is_refused_by_the_client_too(hub: Hub) -> None:
    with pytest.raises(ValueError, match="graph name 'a:b'"):
        DurableGraph(hub.client(), "a:b", graphs.linear().compile())
