"""``store.index`` served: a put embeds its item, a search's ``query`` ranks by cosine similarity, with the rankings
and scores of LangGraph's own ``InMemoryStore(index=...)`` given the same embed function, over HTTP (the
``langgraph_sdk`` client) and through the graphs' ``runtime.store`` on the workers."""

from __future__ import annotations

import dataclasses
import uuid
from contextlib import asynccontextmanager
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from durabletask.extensions.langgraph import DurableGraph, register_graph
from durabletask.extensions.langgraph._server import store
from durabletask.extensions.langgraph._server.config import ConfigError, ServerSettings
from durabletask.extensions.langgraph._server.config_store import StoreIndexSettings
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.store_index import VECTOR_FLOATS_MAX
from tests.langgraph_server.support_resources import ResourceHub, project, resource_hub, resources_emulator, serve

__all__ = ["resource_hub", "resources_emulator"]

DIMS = 8
FIELDS = ["text", "tags[*]"]


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: letters counted into ``DIMS`` buckets, weighted by position."""
    vectors = []
    for text in texts:
        vector = [0.0] * DIMS
        for position, char in enumerate(text.lower()):
            if char.isalpha():
                vector[ord(char) % DIMS] += 1.0 + (position % 3) * 0.25
        vectors.append(vector)
    return vectors


def noisy(texts: list[str]) -> list[list[float]]:
    """Vectors whose numbers take the most room as JSON (17 significant digits, a minus sign)."""
    return [[-0.12345678901234567 - position / 1e9 for position in range(DIMS)] for _ in texts]


async def aembed(texts: list[str]) -> list[list[float]]:
    """:func:`embed`, as a coroutine."""
    return embed(texts)


ITEMS: list[tuple[str, dict[str, Any], Any]] = [
    ("cat", {"text": "a cat sat on the mat", "kind": "pet", "n": 1}, None),
    ("dog", {"text": "the dog ran in the park", "kind": "pet", "n": 2}, None),
    ("car", {"text": "a fast red car", "kind": "thing", "n": 3}, None),
    ("tags", {"text": "zebra", "tags": ["striped horse", "savanna"], "kind": "pet", "n": 4}, None),
    ("skip", {"text": "cats and kittens", "kind": "pet", "n": 5}, False),
    ("own", {"text": "ignored", "note": "parking the car", "kind": "thing", "n": 6}, ["note"]),
    ("empty", {"other": 1, "kind": "thing", "n": 7}, None),
]
UNSCORED = {"skip", "empty"}
"""The items put with nothing to embed (``index=False``, or no text at the fields)."""
SEARCHES: list[dict[str, Any]] = [
    {"query": "cats"},
    {"query": "a car in the park", "limit": 3},
    {"query": "horse", "limit": 2, "offset": 1},
    {"query": "pets", "filter": {"kind": "pet"}},
    {"query": "numbers", "filter": {"n": {"$gt": 2}}, "limit": 4},
    {"query": "a", "offset": 5, "limit": 3},
]


def _settings(name: str = "embed") -> StoreIndexSettings:
    return StoreIndexSettings(dims=DIMS, embed=("module", __name__, name), fields=tuple(FIELDS))


def _indexed_project(name: str = "embed") -> Any:
    return dataclasses.replace(project(), store_index=_settings(name))


def _routes(name: str = "embed") -> Any:
    config = _indexed_project(name)
    return lambda ctx: store.routes(
        ServerContext(client=ctx.client, graphs=ctx.graphs, settings=ServerSettings(project=config), extras=ctx.extras)
    )


def _reference() -> InMemoryStore:
    memory = InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": FIELDS})
    for key, value, index in ITEMS:
        memory.put(("docs",), key, value, index=index)
    return memory


def _split(found: list[tuple[str, float | None]]) -> tuple[list[tuple[str, float]], set[str]]:
    scored = [(key, score) for key, score in found if score is not None]
    return scored, {key for key, score in found if score is None}


def _same(have: list[tuple[str, float | None]], want: list[tuple[str, float | None]]) -> None:
    (have_scored, have_rest), (want_scored, want_rest) = _split(have), _split(want)
    assert [k for k, _ in have_scored] == [k for k, _ in want_scored], (have, want)
    assert [s for _, s in have_scored] == pytest.approx([s for _, s in want_scored], rel=1e-9, abs=1e-12)
    # unscored items (those without vectors) fill the page in the order the filter finds them: insertion order
    # there, newest first here; so which of them fill a cut page may differ, not how many
    assert len(have) == len(want) and len(have_rest) == len(want_rest), (have, want)
    assert have_rest <= UNSCORED and want_rest <= UNSCORED


@asynccontextmanager
async def _served(resource_hub: ResourceHub, name: str = "embed") -> Any:
    async with serve(resource_hub, [_routes(name)], worker_parts=[store.register_worker]) as served:
        yield served


@pytest.mark.parametrize("name", ["embed", "aembed"])
async def test_searches_rank_and_score_as_langgraphs_in_memory_store(resource_hub: ResourceHub, name: str) -> None:
    reference = _reference()
    async with _served(resource_hub, name) as served:
        root = ["ix", uuid.uuid4().hex[:8]]
        for key, value, index in ITEMS:
            await served.sdk.store.put_item([*root, "docs"], key=key, value=value, index=index)
        for search in SEARCHES:
            want = [(i.key, i.score) for i in reference.search(("docs",), **search)]
            have = await served.sdk.store.search_items(root, **search)
            _same([(i["key"], i["score"]) for i in have["items"]], want)
        plain = await served.sdk.store.search_items(root, limit=3)
        assert all(i["score"] is None for i in plain["items"]) and len(plain["items"]) == 3
        got = await served.sdk.store.get_item([*root, "docs"], key="cat")
        assert got is not None and got["value"] == ITEMS[0][1] and "vectors" not in got


async def test_the_node_store_embeds_and_ranks_as_the_routes(resource_hub: ResourceHub) -> None:
    client = resource_hub.sync_client()
    try:
        node_store = store.node_store(client, _indexed_project())
        reference = _reference()
        async with _served(resource_hub) as served:
            root = ("ixn", uuid.uuid4().hex[:8])
            for number, (key, value, index) in enumerate(ITEMS):
                if number % 2:
                    node_store.put((*root, "docs"), key, value, index=index)
                else:
                    await served.sdk.store.put_item([*root, "docs"], key=key, value=value, index=index)
            for search in SEARCHES:
                want = [(i.key, i.score) for i in reference.search(("docs",), **search)]
                over_http = await served.sdk.store.search_items(list(root), **search)
                _same([(i["key"], i["score"]) for i in over_http["items"]], want)
                in_node = await node_store.asearch(root, **search)
                _same([(i.key, i.score) for i in in_node], want)
    finally:
        client.close()


@pytest.mark.adversarial
async def test_hostile_searches_and_puts_are_bounded(resource_hub: ResourceHub) -> None:
    async with _served(resource_hub) as served:
        root = ["ixh", uuid.uuid4().hex[:8]]
        answer = await served.http.post("/store/items/search", json={"namespace_prefix": root, "query": "q" * 5000})
        assert answer.status_code == 422 and "field 'query'" in answer.json()["detail"], answer.text
        many = {"tags": ["word"] * (VECTOR_FLOATS_MAX // DIMS + 1)}
        answer = await served.http.put("/store/items", json={"namespace": root, "key": "many", "value": many})
        assert answer.status_code == 422 and "texts to embed; at most" in answer.json()["detail"], answer.text
        answer = await served.http.put(
            "/store/items", json={"namespace": root, "key": "bad", "value": {"a": "x"}, "index": ["a["]}
        )
        assert answer.status_code == 422 and "unbalanced brackets" in answer.json()["detail"], answer.text
        for number in range(60):
            await served.sdk.store.put_item(root, key=f"k{number}", value={"text": f"item {number} " * 20})
        found = await served.sdk.store.search_items(root, query="item 7", limit=5, offset=50)
        assert len(found["items"]) == 5 and all(isinstance(i["score"], float) for i in found["items"])


@pytest.mark.adversarial
async def test_an_item_with_the_most_vectors_and_the_largest_value_fits_its_entity(resource_hub: ResourceHub) -> None:
    async with _served(resource_hub, "noisy") as served:
        root = ["ixbig", uuid.uuid4().hex[:8]]
        tags = [f"t{number}" for number in range(VECTOR_FLOATS_MAX // DIMS)]
        value = {"tags": tags, "pad": "x" * (510 * 1024 - len(str(tags)))}
        answer = await served.http.put("/store/items", json={"namespace": root, "key": "big", "value": value})
        assert answer.status_code == 204, answer.text
        found = await served.sdk.store.search_items(root, query="t1")
        assert [i["key"] for i in found["items"]] == ["big"] and found["items"][0]["score"] is not None


def test_a_store_index_that_cannot_load_stops_the_routes_and_the_node_store() -> None:

    broken = dataclasses.replace(
        project(), store_index=StoreIndexSettings(dims=DIMS + 1, embed=("module", __name__, "embed"))
    )
    with pytest.raises(ConfigError, match=r"store\.index\.dims is 9"):
        store.node_store(object(), broken)


class _Recall(TypedDict):
    query: str
    found: list[Any]


async def _recall(state: _Recall, runtime: Runtime[Any]) -> dict[str, Any]:
    assert runtime.store is not None
    namespace = tuple(state["found"][0])
    for key, value, index in ITEMS:
        await runtime.store.aput((*namespace, "docs"), key, value, index=index)
    ranked = runtime.store.search(namespace, query=state["query"], limit=4)
    return {"found": [[i.key, i.score] for i in ranked]}


async def test_a_node_on_a_worker_searches_by_query(resource_hub: ResourceHub) -> None:
    client = resource_hub.sync_client()
    try:
        builder = StateGraph(_Recall)
        builder.add_node("recall", _recall)
        builder.add_edge(START, "recall")
        builder.add_edge("recall", END)
        graph = builder.compile(store=store.node_store(client, _indexed_project()))
        name = f"ix{uuid.uuid4().hex[:6]}"
        async with serve(
            resource_hub,
            [_routes()],
            worker_parts=[store.register_worker, lambda w, _: register_graph(w, name, graph)],
        ) as served:
            graph_client = resource_hub.async_client()
            root = ["ixw", uuid.uuid4().hex[:8]]
            app = DurableGraph(graph_client, name, graph)
            out = await app.ainvoke(
                {"query": "a car in the park", "found": [root]}, {"configurable": {"thread_id": root[1]}}
            )
            want = [(i.key, i.score) for i in _reference().search(("docs",), query="a car in the park", limit=4)]
            _same([(key, score) for key, score in out["found"]], want)
            over_http = await served.sdk.store.search_items(root, query="a car in the park", limit=4)
            _same([(i["key"], i["score"]) for i in over_http["items"]], want)
            await graph_client.close()
    finally:
        client.close()
