"""The store's routes, through ``langgraph_sdk``'s client, against the emulator: items live in the task hub's
entities, so a second server over the same hub sees them; hostile bodies get a 422 naming the field and the limit."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langgraph_sdk.errors import UnprocessableEntityError

from durabletask.extensions.langgraph._server import store
from durabletask.extensions.langgraph._server import store_model as model
from tests.langgraph_server.support_resources import ResourceHub, resource_hub, resources_emulator, serve

__all__ = ["resource_hub", "resources_emulator"]


def _ns(*labels: str) -> list[str]:
    return ["t", uuid.uuid4().hex[:8], *labels]


async def test_put_get_delete_round_trip(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        ns = _ns("docs")
        await served.sdk.store.put_item(ns, key="doc-1", value={"title": "Hello"})
        first = await served.sdk.store.get_item(ns, key="doc-1")
        assert first is not None
        assert (first["namespace"], first["key"], first["value"]) == (ns, "doc-1", {"title": "Hello"})
        await served.sdk.store.put_item(ns, key="doc-1", value={"title": "Again"})
        second = await served.sdk.store.get_item(ns, key="doc-1")
        assert second["value"] == {"title": "Again"}
        assert second["created_at"] == first["created_at"]
        assert second["updated_at"] > first["updated_at"]
        await served.sdk.store.delete_item(ns, key="doc-1")
        assert await served.sdk.store.get_item(ns, key="doc-1") is None
        await served.sdk.store.delete_item(ns, key="never-there")  # deleting nothing is fine


async def test_a_second_server_over_the_same_hub_sees_the_items(resource_hub: ResourceHub) -> None:
    async with (
        serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as one,
        serve(resource_hub, [store.routes], start_worker=False) as other,
    ):
        ns = _ns()
        await one.sdk.store.put_item(ns, key="k", value={"n": 1})
        found = await other.sdk.store.get_item(ns, key="k")
        assert found is not None and found["value"] == {"n": 1}
        await other.sdk.store.delete_item(ns, key="k")
        assert await one.sdk.store.get_item(ns, key="k") is None


async def test_search_by_prefix_filter_and_page(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        root = _ns()
        s = served.sdk.store
        await s.put_item([*root, "a"], key="1", value={"kind": "alpha", "n": 1})
        await s.put_item([*root, "a"], key="2", value={"kind": "beta", "n": 2})
        await s.put_item([*root, "b", "deep"], key="3", value={"kind": "alpha", "n": 3})
        await s.put_item(["other", "space"], key="4", value={"kind": "alpha", "n": 4})
        everything = await s.search_items(root, limit=10)
        assert sorted(i["key"] for i in everything["items"]) == ["1", "2", "3"]
        assert [i["key"] for i in everything["items"]] == ["3", "2", "1"]  # most recently updated first
        alpha = await s.search_items(root, filter={"kind": "alpha"})
        assert sorted(i["key"] for i in alpha["items"]) == ["1", "3"]
        bigger = await s.search_items(root, filter={"n": {"$gte": 2}, "kind": {"$ne": "beta"}})
        assert [i["key"] for i in bigger["items"]] == ["3"]
        under_a = await s.search_items([*root, "a"])
        assert sorted(i["key"] for i in under_a["items"]) == ["1", "2"]
        paged = await s.search_items(root, limit=2, offset=1)
        assert [i["key"] for i in paged["items"]] == ["2", "1"]


async def test_namespaces_with_prefix_suffix_depth_and_wildcards(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        root = _ns()
        s = served.sdk.store
        for tail in (["users", "u1", "notes"], ["users", "u2", "notes"], ["users", "u2", "todo"], ["teams"]):
            await s.put_item([*root, *tail], key="k", value={})
        listed = await s.list_namespaces(prefix=root)
        assert listed["namespaces"] == [
            [*root, "teams"],
            [*root, "users", "u1", "notes"],
            [*root, "users", "u2", "notes"],
            [*root, "users", "u2", "todo"],
        ]
        notes = await s.list_namespaces(prefix=[*root, "users"], suffix=["notes"])
        assert notes["namespaces"] == [[*root, "users", "u1", "notes"], [*root, "users", "u2", "notes"]]
        shallow = await s.list_namespaces(prefix=root, max_depth=len(root) + 1)
        assert shallow["namespaces"] == [[*root, "teams"], [*root, "users"]]
        wild = await s.list_namespaces(prefix=[*root, "users", "*", "todo"])
        assert wild["namespaces"] == [[*root, "users", "u2", "todo"]]
        page = await s.list_namespaces(prefix=root, limit=1, offset=1)
        assert page["namespaces"] == [[*root, "users", "u1", "notes"]]


async def test_long_and_unicode_namespaces_and_keys_round_trip(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        # GET carries the namespace and key in its URL, whose request line aiohttp caps at 8,190 bytes.
        ns = [f"lbl-{i}-" + "é" * 40 for i in range(12)]
        key = "用户/" + "k" * 500
        await served.sdk.store.put_item(ns, key=key, value={"ok": True})
        found = await served.sdk.store.get_item(ns, key=key)
        assert found is not None and found["key"] == key and found["namespace"] == ns
        found_by_prefix = await served.sdk.store.search_items(ns[:8])
        assert [i["key"] for i in found_by_prefix["items"]] == [key]


async def test_an_item_past_its_ttl_is_gone(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        ns = _ns()
        brief: Any = 0.001  # minutes: 60 ms (the SDK's annotation says int; the API takes any number)
        await served.sdk.store.put_item(ns, key="brief", value={"v": 1}, ttl=brief)
        await served.sdk.store.put_item(ns, key="kept", value={"v": 2})
        for _ in range(200):
            if await served.sdk.store.get_item(ns, key="brief", refresh_ttl=False) is None:
                break
            await asyncio.sleep(0.05)
        assert await served.sdk.store.get_item(ns, key="brief") is None
        listed = await served.sdk.store.search_items(ns)
        assert [i["key"] for i in listed["items"]] == ["kept"]
        await served.sdk.store.put_item(ns, key="brief-too", value={"v": 3}, ttl=brief)
        entity = model.item_entity(ns, "brief-too")
        for _ in range(200):  # until a search that meets it past its TTL has it deleted
            # Without refreshing: a search that finds it still alive pushes its expiry back 60 ms, and one every
            # 60 ms (as fast as this loop runs on a quick store) would keep it alive for good.
            await served.sdk.store.search_items(ns, refresh_ttl=False)
            if await served.ctx.client.get_entity(entity) is None:
                break
            await asyncio.sleep(0.05)
        assert await served.ctx.client.get_entity(entity) is None


async def _status_and_detail(served: Any, method: str, path: str, **kwargs: Any) -> tuple[int, str]:
    response = await served.http.request(method, path, **kwargs)
    detail = response.json().get("detail", "") if response.content else ""
    return response.status_code, detail


_HOSTILE: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "PUT",
        "/store/items",
        {"json": {"namespace": ["a"], "key": "k", "value": {"x": "y" * 600_000}}},
        f"field 'value' is 600008 bytes of JSON; the limit is {model.VALUE_MAX_BYTES}",
    ),
    (
        "PUT",
        "/store/items",
        {"json": {"namespace": ["a"], "key": "k", "value": [1, 2]}},
        "field 'value' must be a JSON object",
    ),
    ("PUT", "/store/items", {"json": {"namespace": [], "key": "k", "value": {}}}, "field 'namespace' cannot be empty"),
    (
        "PUT",
        "/store/items",
        {"json": {"namespace": ["a.b"], "key": "k", "value": {}}},
        "field 'namespace[0]' cannot contain '.'",
    ),
    (
        "PUT",
        "/store/items",
        {"json": {"namespace": ["a", 5], "key": "k", "value": {}}},
        "field 'namespace[1]' must be a string",
    ),
    (
        "PUT",
        "/store/items",
        {"json": {"namespace": ["x"] * 21, "key": "k", "value": {}}},
        f"field 'namespace' has 21 labels; the limit is {model.NAMESPACE_MAX_LABELS}",
    ),
    (
        "PUT",
        "/store/items",
        {"json": {"namespace": ["a" * 257], "key": "k", "value": {}}},
        f"field 'namespace[0]' is 257 characters long; the limit is {model.LABEL_MAX_CHARS}",
    ),
    (
        "PUT",
        "/store/items",
        {"json": {"namespace": ["a"], "key": "k" * 1025, "value": {}}},
        f"field 'key' is 1025 characters long; the limit is {model.KEY_MAX_CHARS}",
    ),
    ("PUT", "/store/items", {"json": {"namespace": ["a"], "key": "", "value": {}}}, "field 'key' cannot be empty"),
    ("PUT", "/store/items", {"json": {"namespace": ["langgraph"], "key": "k", "value": {}}}, "reserved"),
    ("PUT", "/store/items", {"json": {"namespace": ["a"], "key": "k", "value": {}, "ttl": -1}}, "field 'ttl'"),
    ("PUT", "/store/items", {"json": {"namespace": ["a"], "key": "k", "value": {}, "index": "all"}}, "field 'index'"),
    (
        "PUT",
        "/store/items",
        {"content": b"{not json", "headers": {"content-type": "application/json"}},
        "not valid JSON",
    ),
    ("PUT", "/store/items", {"content": b"\xff\xfe", "headers": {"content-type": "application/json"}}, "not UTF-8"),
    ("PUT", "/store/items", {"json": [1, 2]}, "must be a JSON object, got an array"),
    (
        "PUT",
        "/store/items",
        {"content": b'{"namespace": ["a"], "key": "k", "value": {"x": NaN}}'},
        "holds NaN, which JSON does not have",
    ),
    (
        "PUT",
        "/store/items",
        {"content": b'{"namespace": ["a"], "key": "k", "value": {"x": 1e999}}'},
        "holds the number 1e999 (out of range)",
    ),
    ("PUT", "/store/items", {"content": b"[" * 100_000}, "the request body"),
    ("GET", "/store/items", {"params": {"namespace": "a", "key": ""}}, "field 'key' cannot be empty"),
    (
        "GET",
        "/store/items",
        {"params": {"namespace": "a" * 6000, "key": "k"}},
        "query parameter 'namespace' is 6000 characters long; the limit is 5140",
    ),
    ("GET", "/store/items", {"params": {"namespace": "a", "key": "k", "refresh_ttl": "maybe"}}, "'refresh_ttl'"),
    ("DELETE", "/store/items", {"json": {"namespace": "a", "key": "k"}}, "field 'namespace' must be a list"),
    ("POST", "/store/items/search", {"json": {"limit": 5000}}, "field 'limit' must be from 1 to 1000, got 5000"),
    ("POST", "/store/items/search", {"json": {"limit": "ten"}}, "field 'limit' must be a whole number"),
    ("POST", "/store/items/search", {"json": {"offset": -1}}, "field 'offset' must be from 0"),
    ("POST", "/store/items/search", {"json": {"filter": {"n": {"$regex": "x"}}}}, "operator '$regex'"),
    ("POST", "/store/items/search", {"json": {"filter": "kind=alpha"}}, "field 'filter' must be a JSON object"),
    ("POST", "/store/items/search", {"json": {"query": 7}}, "field 'query' must be a string"),
    ("POST", "/store/namespaces", {"json": {"max_depth": 0}}, "field 'max_depth' must be from 1"),
    ("POST", "/store/namespaces", {"json": {"prefix": "a"}}, "field 'prefix' must be a list"),
    (
        "PUT",
        "/store/items",
        {"content": b'{"namespace": ["a"], "key": "k", "value": {"x": ' + b"9" * 5000 + b"}}"},
        "a number too long to read; the limit is 4300 digits",
    ),
    (
        "POST",
        "/store/items/search",
        {"content": b'{"filter": {"n": ' + b"9" * 5000 + b"}}"},
        "a number too long to read",
    ),
    (
        "PUT",
        "/store/items",
        {"content": b'{"namespace": ["a", "\\ud800"], "key": "k", "value": {}}'},
        "field 'namespace[1]' holds a lone surrogate",
    ),
    (
        "PUT",
        "/store/items",
        {"content": b'{"namespace": ["a"], "key": "\\ud800", "value": {}}'},
        "field 'key' holds a lone surrogate",
    ),
    (
        "PUT",
        "/store/items",
        {"content": b'{"namespace": ["a"], "key": "k", "value": {"deep": ["x", {"y": "\\udfff"}]}}'},
        "field 'value.deep[1].y' holds a lone surrogate",
    ),
    (
        "DELETE",
        "/store/items",
        {"content": b'{"namespace": ["\\ud800"], "key": "k"}'},
        "field 'namespace[0]' holds a lone surrogate",
    ),
    (
        "POST",
        "/store/items/search",
        {"content": b'{"filter": {"\\ud800": 1}}'},
        "field 'filter' has a key holding a lone surrogate",
    ),
    (
        "POST",
        "/store/namespaces",
        {"content": b'{"prefix": ["\\udc00"]}'},
        "field 'prefix[0]' holds a lone surrogate",
    ),
]


@pytest.mark.adversarial
async def test_hostile_bodies_get_a_422_naming_the_field_and_the_limit(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as served:
        for method, path, kwargs, expected in _HOSTILE:
            status, detail = await _status_and_detail(served, method, path, **kwargs)
            assert status == 422, (method, path, status, detail)
            assert expected in detail, (method, path, detail)
        with pytest.raises(UnprocessableEntityError):
            await served.sdk.store.search_items(["a"], limit=0)


async def test_concurrent_writes_to_one_item_through_two_servers(resource_hub: ResourceHub) -> None:
    async with (
        serve(resource_hub, [store.routes], worker_parts=[store.register_worker]) as one,
        serve(resource_hub, [store.routes], start_worker=False) as other,
    ):
        ns = _ns()
        await one.sdk.store.put_item(ns, key="k", value={"n": -1})
        first = await one.sdk.store.get_item(ns, key="k")
        servers = [one, other]
        writes = [servers[n % 2].sdk.store.put_item(ns, key="k", value={"n": n}) for n in range(10)]
        reads = [servers[n % 2].sdk.store.get_item(ns, key="k") for n in range(10)]
        _, seen = await asyncio.gather(asyncio.gather(*writes), asyncio.gather(*reads))
        assert all(item is not None and item["value"]["n"] in range(-1, 10) for item in seen)
        final = await other.sdk.store.get_item(ns, key="k")
        assert final is not None and final["value"]["n"] in range(10)
        assert final["created_at"] == first["created_at"]  # every write after the first keeps its creation time
        listed = await one.sdk.store.search_items(ns)
        assert [i["key"] for i in listed["items"]] == ["k"]
