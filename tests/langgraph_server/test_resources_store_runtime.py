"""The graphs' store (``runtime.store``) over the same entities as ``/store/items``: what a node writes on a worker
is what a client reads over HTTP, and the reverse; LangGraph's ``BaseStore`` calls, sync and async."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from durabletask.extensions.langgraph import DurableGraph, register_graph
from durabletask.extensions.langgraph._server import store
from durabletask.extensions.langgraph._server.store_model import StoreInputError
from tests.langgraph_server.support_resources import ResourceHub, resource_hub, resources_emulator, serve

__all__ = ["resource_hub", "resources_emulator"]


async def test_the_base_store_and_the_routes_share_items(resource_hub: ResourceHub) -> None:
    client = resource_hub.sync_client()
    try:
        node_store: BaseStore = store.node_store(client)
        async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
            ns = ("rt", uuid.uuid4().hex[:8])
            await node_store.aput(ns, "a", {"kind": "alpha", "n": 1})
            node_store.put((*ns, "deep"), "b", {"kind": "beta", "n": 2})
            over_http = await served.sdk.store.get_item(list(ns), key="a")
            assert over_http is not None and over_http["value"] == {"kind": "alpha", "n": 1}
            await served.sdk.store.put_item([*ns, "deep"], key="c", value={"kind": "alpha", "n": 3})
            item = node_store.get((*ns, "deep"), "c")
            assert item is not None and item.value == {"kind": "alpha", "n": 3} and item.namespace == (*ns, "deep")
            assert item.created_at.tzinfo is not None
            found = await node_store.asearch(ns, filter={"kind": "alpha"})
            assert sorted(i.key for i in found) == ["a", "c"]
            assert [i.key for i in node_store.search(ns, filter={"n": {"$gt": 1}}, limit=1)] == ["c"]
            assert node_store.list_namespaces(prefix=ns) == [ns, (*ns, "deep")]
            assert await node_store.alist_namespaces(prefix=ns, max_depth=2) == [ns]
            assert node_store.list_namespaces(prefix=ns, suffix=("deep",)) == [(*ns, "deep")]
            node_store.delete(ns, "a")
            assert await served.sdk.store.get_item(list(ns), key="a") is None
            # no store.index: a query ranks nothing, as in LangGraph's server without one
            by_query = node_store.search(ns, query="cats", filter={"kind": "alpha"})
            assert [(i.key, i.score) for i in by_query] == [(i.key, None) for i in found if i.key != "a"]
            with pytest.raises(StoreInputError, match="the limit is 524288"):
                node_store.put(ns, "big", {"x": "y" * 600_000})
    finally:
        client.close()


class _Memory(TypedDict):
    user: str
    seen: int


def _remember(state: _Memory, runtime: Runtime[Any]) -> dict[str, Any]:
    assert runtime.store is not None
    namespace = ("memories", state["user"])
    runtime.store.put(namespace, f"visit-{len(runtime.store.search(namespace)) + 1}", {"user": state["user"]})
    return {"seen": len(runtime.store.search(namespace, limit=100))}


async def _recall(state: _Memory, runtime: Runtime[Any]) -> dict[str, Any]:
    assert runtime.store is not None
    found = await runtime.store.aget(("memories", state["user"]), "visit-1")
    return {"seen": state["seen"] * 10 + (1 if found is not None else 0)}


async def test_a_node_on_a_worker_writes_what_a_client_reads(resource_hub: ResourceHub) -> None:
    client = resource_hub.sync_client()
    try:
        builder = StateGraph(_Memory)
        builder.add_node("remember", _remember)
        builder.add_node("recall", _recall)
        builder.add_edge(START, "remember")
        builder.add_edge("remember", "recall")
        builder.add_edge("recall", END)
        graph = builder.compile(store=store.node_store(client))
        name = f"mem{uuid.uuid4().hex[:6]}"
        async with serve(
            resource_hub,
            [store.routes],
            worker_parts=[store.register_worker, lambda w, _: register_graph(w, name, graph)],
        ) as served:
            graph_client = resource_hub.async_client()
            app = DurableGraph(graph_client, name, graph)
            user = uuid.uuid4().hex[:8]
            first = await app.ainvoke({"user": user, "seen": 0}, {"configurable": {"thread_id": f"t-{user}"}})
            assert first == {"user": user, "seen": 11}
            second = await app.ainvoke({"user": user, "seen": 0}, {"configurable": {"thread_id": f"u-{user}"}})
            assert second == {"user": user, "seen": 21}
            listed = await served.sdk.store.search_items(["memories", user])
            assert sorted(i["key"] for i in listed["items"]) == ["visit-1", "visit-2"]
            await graph_client.close()
    finally:
        client.close()
