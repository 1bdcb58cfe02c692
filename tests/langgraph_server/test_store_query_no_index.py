"""A store search's ``query`` with no ``store.index`` configured: taken as LangGraph's server takes it, ranking
nothing (every score null, the items those the filter finds); a ``store.ttl`` config stops the server at startup."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from durabletask.extensions.langgraph._server import store
from durabletask.extensions.langgraph._server.config import ConfigError, load_config
from tests.langgraph_server.support_resources import ResourceHub, resource_hub, resources_emulator, serve

__all__ = ["resource_hub", "resources_emulator"]


async def test_a_query_ranks_nothing_without_an_index(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        s = served.sdk.store
        root = ["q", uuid.uuid4().hex[:8]]
        await s.put_item(root, key="cat", value={"text": "a cat sat", "kind": "pet"}, index=["text"])
        await s.put_item(root, key="car", value={"text": "a fast car", "kind": "thing"}, index=False)
        await s.put_item(root, key="dog", value={"text": "a dog ran", "kind": "pet"})
        plain = (await s.search_items(root, limit=10))["items"]
        asked = (await s.search_items(root, query="cats", limit=10))["items"]
        assert [i["key"] for i in asked] == [i["key"] for i in plain] == ["dog", "car", "cat"]
        assert all(i["score"] is None for i in asked)
        pets = (await s.search_items(root, query="which animals?", filter={"kind": "pet"}, limit=1, offset=1))["items"]
        assert [i["key"] for i in pets] == ["cat"]
        assert (await s.get_item(root, key="cat"))["value"] == {"text": "a cat sat", "kind": "pet"}


@pytest.mark.adversarial
async def test_a_malformed_query_or_index_is_refused(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        for body, said in (
            ({"query": ["cats"]}, "field 'query' must be a string"),
            ({"query": "c" * 5000}, "field 'query'"),
        ):
            answer = await served.http.post("/store/items/search", json=body)
            assert answer.status_code == 422 and said in answer.json()["detail"], answer.text
        for index in ("text", [1], [""], ["f"] * 101, {"fields": ["text"]}, True):
            answer = await served.http.put(
                "/store/items", json={"namespace": ["q"], "key": "k", "value": {}, "index": index}
            )
            assert answer.status_code == 422 and "field 'index'" in answer.json()["detail"], answer.text


def test_a_store_ttl_config_stops_the_server_at_startup(tmp_path: Path) -> None:
    (tmp_path / "graph.py").write_text("graph = None\n")
    config = {"graphs": {"g": "./graph.py:graph"}, "store": {"ttl": {"default_ttl": 5}}}
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=r"store.ttl defaults are not supported"):
        load_config(tmp_path)
