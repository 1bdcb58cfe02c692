"""A rolling deploy never kills a thread, and no request waits without a bound."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langgraph.types import Command

from durabletask.client import AsyncTaskHubGrpcClient, OrchestrationStatus
from durabletask.extensions.langgraph import (
    DurableGraph,
    GraphNotRegisteredError,
    GraphTimeoutError,
    instance_id,
    register_graph,
)
from tests.e2e.conftest import Hub
from tests.e2e.langgraph import graphs

pytestmark = pytest.mark.adversarial


def _cfg() -> dict[str, Any]:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


def _graph_worker(hub: Hub, name: str) -> Any:
    worker = hub.worker()
    register_graph(worker, name, graphs.linear().compile())
    worker.start()
    return worker


def _other_worker(hub: Hub, *, filtered: bool) -> Any:
    """A worker of the same task hub that serves another graph only (an older or newer deployment)."""
    worker = hub.worker()
    register_graph(worker, f"other{uuid.uuid4().hex[:6]}", graphs.cycle().compile())
    if filtered:
        worker.use_work_item_filters()
    worker.start()
    return worker


def test_a_thread_first_taken_by_a_worker_without_its_graph_recovers_once_a_right_worker_is_up(hub: Hub) -> None:
    name = f"roll{uuid.uuid4().hex[:6]}"
    wrong = _other_worker(hub, filtered=False)  # sends no filters: the backend offers it every orchestration
    app = DurableGraph(hub.client(), name, graphs.linear().compile(), start_timeout=1.0)
    cfg = _cfg()
    with pytest.raises(GraphNotRegisteredError, match="use_work_item_filters"):
        app.invoke({"x": 1, "items": []}, cfg)
    state = hub.client().get_orchestration_state(instance_id(name, cfg["configurable"]["thread_id"]))
    assert state is not None and state.runtime_status == OrchestrationStatus.FAILED
    wrong.stop()
    _graph_worker(hub, name)
    assert app.invoke({"x": 1, "items": []}, cfg)["items"] == ["a", "b", "c4"]


def test_a_worker_with_filters_never_takes_a_graph_it_does_not_serve(hub: Hub) -> None:
    name = f"roll{uuid.uuid4().hex[:6]}"
    _other_worker(hub, filtered=True)
    app = DurableGraph(hub.client(), name, graphs.linear().compile(), start_timeout=0.5)
    cfg = _cfg()
    with pytest.raises(GraphNotRegisteredError, match="no worker picked up"):
        app.invoke({"x": 1, "items": []}, cfg)
    state = hub.client().get_orchestration_state(instance_id(name, cfg["configurable"]["thread_id"]))
    assert state is not None and state.runtime_status == OrchestrationStatus.PENDING
    _graph_worker(hub, name)
    assert app.invoke(None, cfg)["items"] == ["a", "b", "c4"]


def _interrupted(hub: Hub, client: Any = None) -> tuple[DurableGraph, dict[str, Any], Any]:
    """A thread waiting at an interrupt, then no worker left."""
    name = f"roll{uuid.uuid4().hex[:6]}"
    worker = hub.worker()
    register_graph(worker, name, graphs.approvals().compile())
    worker.start()
    cfg = _cfg()
    asked = DurableGraph(hub.client(), name, graphs.approvals().compile()).invoke({"x": 0, "items": []}, cfg)
    worker.stop()
    return DurableGraph(client or hub.client(), name, graphs.approvals().compile()), cfg, asked["__interrupt__"]


def test_a_resume_while_no_worker_runs_times_out_saying_what_it_waited_for(hub: Hub) -> None:
    app, cfg, asked = _interrupted(hub)
    resume = Command(resume={i.id: "yes" for i in asked})
    with pytest.raises(GraphTimeoutError, match=r"run request on thread .* got no result within 0.3 s") as caught:
        app.invoke(resume, cfg, timeout=0.3)
    assert isinstance(caught.value, TimeoutError)
    assert "no worker serving graph" in str(caught.value)
    with pytest.raises(GraphTimeoutError):
        list(app.stream(None, cfg, timeout=0.1))
    with pytest.raises(ValueError, match="timeout"):
        app.invoke(None, cfg, timeout=-1)


@pytest.mark.local_only("the async client is made for the emulator's address")
def test_ainvoke_and_astream_take_a_timeout_too(hub: Hub) -> None:
    async def main() -> None:
        client = AsyncTaskHubGrpcClient(host_address=hub.address, metadata=hub.metadata)
        try:
            app, cfg, asked = _interrupted(hub, client)
            with pytest.raises(GraphTimeoutError, match="no worker serving graph"):
                await app.ainvoke(Command(resume={i.id: "yes" for i in asked}), cfg, timeout=0.2)
            with pytest.raises(GraphTimeoutError):
                _ = [chunk async for chunk in app.astream(None, cfg, timeout=0.1)]
        finally:
            await client.close()

    asyncio.run(main())
