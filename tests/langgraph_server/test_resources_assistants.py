"""The assistants' routes, through ``langgraph_sdk``'s client, against the emulator: system assistants per graph,
created assistants in the task hub (seen by a second server), versions, the graph's drawing, schemas and subgraphs,
and hostile requests refused with a 4xx naming the field."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError

from durabletask.extensions.langgraph._server import assistants, store
from durabletask.extensions.langgraph._server.services import ASSISTANTS_KEY
from tests.langgraph_server.support_resources import ResourceHub, resource_hub, resources_emulator, serve

__all__ = ["resource_hub", "resources_emulator"]

_PARTS = [store.register_worker, assistants.register_worker]
_ROUTES = [assistants.routes]


def _system_id(graph_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, graph_id))


async def test_each_graph_has_a_system_assistant(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        found = await served.sdk.assistants.search(graph_id="chain", limit=1)
        assert [a["assistant_id"] for a in found] == [_system_id("chain")]
        assert found[0]["metadata"] == {"created_by": "system"}
        by_graph = await served.sdk.assistants.get("chain")
        by_id = await served.sdk.assistants.get(_system_id("chain"))
        assert by_graph == by_id == found[0]
        system = await served.sdk.assistants.search(metadata={"created_by": "system"}, limit=100)
        assert sorted(a["graph_id"] for a in system) == ["chain", "factory", "nested"]
        assert await served.sdk.assistants.count(metadata={"created_by": "system"}) == 3
        resolved = await served.ctx.extras[ASSISTANTS_KEY].resolve("nested")
        assert (resolved.assistant_id, resolved.graph_id) == (_system_id("nested"), "nested")


async def test_create_get_update_versions_delete(resource_hub: ResourceHub) -> None:
    async with (
        serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served,
        serve(resource_hub, _ROUTES, start_worker=False) as other,
    ):
        client = served.sdk.assistants
        created = await client.create(
            graph_id="chain",
            config={"configurable": {"k": 1}},
            context={"model_name": "a"},
            metadata={"suite": "x", "label": "one"},
            name="Writer",
        )
        aid = created["assistant_id"]
        assert (created["version"], created["name"], created["graph_id"]) == (1, "Writer", "chain")
        assert await other.sdk.assistants.get(aid) == created
        updated = await client.update(aid, metadata={"label": "two"}, context={"model_name": "b"})
        assert updated["version"] == 2
        assert updated["metadata"] == {"suite": "x", "label": "two"}
        assert updated["config"] == {"configurable": {"k": 1}}
        assert [a["assistant_id"] for a in await client.search(metadata={"label": "two"})] == [aid]
        assert await client.search(metadata={"label": "one"}) == []
        versions = await client.get_versions(aid)
        assert [(v["version"], v["metadata"]["label"]) for v in versions] == [(2, "two"), (1, "one")]
        assert [v["version"] for v in await client.get_versions(aid, metadata={"label": "one"})] == [1]
        back = await client.set_latest(aid, 1)
        assert (back["version"], back["metadata"]["label"], back["context"]) == (1, "one", {"model_name": "a"})
        resolved = await served.ctx.extras[ASSISTANTS_KEY].resolve(aid)
        assert (resolved.graph_id, dict(resolved.context)) == ("chain", {"model_name": "a"})
        await other.sdk.assistants.delete(aid)
        with pytest.raises(NotFoundError):
            await client.get(aid)
        with pytest.raises(NotFoundError):
            await client.delete(aid)


async def test_create_with_an_id_raises_or_returns_the_existing_one(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        client = served.sdk.assistants
        aid = str(uuid.uuid4())
        first = await client.create(graph_id="chain", assistant_id=aid, name="first")
        with pytest.raises(ConflictError):
            await client.create(graph_id="nested", assistant_id=aid, name="second")
        again = await client.create(graph_id="nested", assistant_id=aid, name="second", if_exists="do_nothing")
        assert again == first
        with pytest.raises(ConflictError):
            await client.create(graph_id="chain", assistant_id=_system_id("chain"))


async def test_search_sorts_pages_selects_and_counts(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        client = served.sdk.assistants
        tag = uuid.uuid4().hex
        for name in ("Charlie", "alpha", "Bravo"):
            await client.create(graph_id="nested", metadata={"tag": tag}, name=name)
        by_name = await client.search(metadata={"tag": tag}, sort_by="name", sort_order="asc")
        assert [a["name"] for a in by_name] == ["Bravo", "Charlie", "alpha"]
        newest = await client.search(metadata={"tag": tag})
        assert [a["name"] for a in newest] == ["Bravo", "alpha", "Charlie"]  # created_at, newest first
        page = await client.search(metadata={"tag": tag}, limit=2, response_format="object")
        assert len(page["assistants"]) == 2 and page["next"] == "2"
        last = await client.search(metadata={"tag": tag}, limit=2, offset=2, response_format="object")
        assert len(last["assistants"]) == 1 and last["next"] is None
        narrow = await client.search(metadata={"tag": tag}, name="RAV", select=["name", "version"])
        assert narrow == [{"name": "Bravo", "version": 1}]
        assert await client.count(metadata={"tag": tag}) == 3
        assert await client.count(metadata={"tag": tag}, name="a", graph_id="nested") == 3
        assert await client.count(metadata={"tag": tag}, graph_id="chain") == 0


async def test_a_system_assistant_can_be_changed_but_not_deleted(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        client = served.sdk.assistants
        changed = await client.update("chain", metadata={"owner": "ops"})
        assert (changed["assistant_id"], changed["version"]) == (_system_id("chain"), 2)
        assert changed["metadata"] == {"created_by": "system", "owner": "ops"}
        listed = await client.search(graph_id="chain")
        assert [(a["assistant_id"], a["version"]) for a in listed] == [(_system_id("chain"), 2)]
        assert [v["version"] for v in await client.get_versions("chain")] == [2, 1]
        with pytest.raises(ConflictError):
            await client.delete("chain")


async def test_graph_schemas_and_subgraphs(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        client = served.sdk.assistants
        drawn = await client.get_graph(_system_id("chain"))
        assert {n["id"] for n in drawn["nodes"]} == {"__start__", "plan", "write", "__end__"}
        assert {(e["source"], e["target"]) for e in drawn["edges"]} == {
            ("__start__", "plan"),
            ("plan", "write"),
            ("write", "__end__"),
        }
        flat = await client.get_graph("nested")
        deep = await client.get_graph("nested", xray=True)
        assert "team" in {n["id"] for n in flat["nodes"]}
        assert {"team:draft", "team:review"} <= {n["id"] for n in deep["nodes"]}
        one_level = await client.get_graph("nested", xray=1)
        assert "team:draft" in {n["id"] for n in one_level["nodes"]}
        schemas = await client.get_schemas("chain")
        assert schemas["graph_id"] == "chain"
        assert set(schemas["state_schema"]["properties"]) == {"topic", "steps"}
        assert set(schemas["input_schema"]["properties"]) == {"topic", "steps"}
        assert set(schemas["context_schema"]["properties"]) == {"model_name"}
        subgraphs = await client.get_subgraphs("nested")
        assert list(subgraphs) == ["team"]
        assert set(subgraphs["team"]["state_schema"]["properties"]) == {"topic", "steps"}
        assert list(await client.get_subgraphs("nested", namespace="team")) == ["team"]
        assert await client.get_subgraphs("chain", recurse=True) == {}


async def test_a_factory_graph_is_built_with_the_assistants_config(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        client = served.sdk.assistants
        plain = await client.get_graph("factory")
        assert "polish_plain" in {n["id"] for n in plain["nodes"]}
        spicy = await client.create(graph_id="factory", config={"configurable": {"flavor": "spicy"}})
        drawn = await client.get_graph(spicy["assistant_id"])
        assert "polish_spicy" in {n["id"] for n in drawn["nodes"]}


_HOSTILE: list[tuple[str, str, dict[str, Any], int, str]] = [
    ("POST", "/assistants", {"json": {}}, 422, "field 'graph_id' is required"),
    ("POST", "/assistants", {"json": {"graph_id": 7}}, 422, "field 'graph_id' must be a string"),
    ("POST", "/assistants", {"json": {"graph_id": "nope"}}, 404, "graph 'nope'"),
    (
        "POST",
        "/assistants",
        {"json": {"graph_id": "chain", "assistant_id": "not-a-uuid"}},
        422,
        "field 'assistant_id' must be a UUID",
    ),
    (
        "POST",
        "/assistants",
        {"json": {"graph_id": "chain", "metadata": [1]}},
        422,
        "field 'metadata' must be a JSON object",
    ),
    (
        "POST",
        "/assistants",
        {"json": {"graph_id": "chain", "config": {"x": "y" * 70_000}}},
        422,
        f"field 'config' is 70008 bytes of JSON; the limit is {assistants.CONFIG_MAX_BYTES}",
    ),
    (
        "POST",
        "/assistants",
        {"json": {"graph_id": "chain", "name": "n" * 2000}},
        422,
        "field 'name' is 2000 characters long; the limit is 1024",
    ),
    ("POST", "/assistants", {"json": {"graph_id": "chain", "if_exists": "overwrite"}}, 422, "field 'if_exists'"),
    ("POST", "/assistants", {"content": b'{"graph_id": '}, 422, "not valid JSON"),
    ("POST", "/assistants/search", {"json": {"limit": 0}}, 422, "field 'limit' must be from 1 to 1000"),
    ("POST", "/assistants/search", {"json": {"sort_by": "secret"}}, 422, "field 'sort_by'"),
    ("POST", "/assistants/search", {"json": {"select": ["password"]}}, 422, "field 'select'"),
    ("POST", "/assistants/search", {"json": {"metadata": "x"}}, 422, "field 'metadata' must be a JSON object"),
    ("POST", "/assistants/count", {"json": {"name": 5}}, 422, "field 'name' must be a string"),
    ("GET", "/assistants/" + "a" * 300, {}, 422, "the limit is 256"),
    ("GET", "/assistants/not-a-graph", {}, 404, "assistant 'not-a-graph'"),
    ("GET", f"/assistants/{uuid.UUID(int=7)}", {}, 404, "not found"),
    ("PATCH", "/assistants/chain", {"json": {"graph_id": "nope"}}, 404, "graph 'nope'"),
    ("PATCH", "/assistants/chain", {"json": {"context": 3}}, 422, "field 'context' must be a JSON object"),
    ("DELETE", "/assistants/chain?delete_threads=perhaps", {}, 422, "query parameter 'delete_threads'"),
    ("GET", "/assistants/chain/graph?xray=deep", {}, 422, "query parameter 'xray'"),
    ("GET", "/assistants/chain/graph?xray=99", {}, 422, "from 0 to 32"),
    ("GET", "/assistants/chain/subgraphs?recurse=2", {}, 422, "query parameter 'recurse'"),
    ("POST", "/assistants/chain/latest", {"json": {}}, 422, "field 'version' is required"),
    ("POST", "/assistants/chain/latest", {"json": {"version": 9}}, 404, "version 9"),
    ("POST", "/assistants/chain/versions", {"json": {"limit": -3}}, 422, "field 'limit'"),
    (
        "POST",
        "/assistants",
        {"content": b'{"graph_id": "chain", "name": "\\ud800"}'},
        422,
        "field 'name' holds a lone surrogate",
    ),
    (
        "POST",
        "/assistants",
        {"content": b'{"graph_id": "chain", "metadata": {"\\udfff": 1}}'},
        422,
        "field 'metadata' has a key holding a lone surrogate",
    ),
    (
        "POST",
        "/assistants",
        {"content": b'{"graph_id": "chain", "config": {"n": ' + b"9" * 5000 + b"}}"},
        422,
        "a number too long to read; the limit is 4300 digits",
    ),
    (
        "POST",
        "/assistants/search",
        {"content": b'{"metadata": {"n": ' + b"9" * 5000 + b"}}"},
        422,
        "a number too long to read",
    ),
    (
        "PATCH",
        "/assistants/chain",
        {"content": b'{"description": "\\ud800"}'},
        422,
        "field 'description' holds a lone surrogate",
    ),
]


@pytest.mark.adversarial
async def test_hostile_requests_get_a_4xx_naming_the_field(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        for method, path, kwargs, status, expected in _HOSTILE:
            response = await served.http.request(method, path, **kwargs)
            detail = response.json().get("detail", "")
            assert response.status_code == status, (method, path, response.status_code, detail)
            assert expected in detail, (method, path, detail)


async def test_deleting_with_delete_threads_deletes_the_assistants_threads(resource_hub: ResourceHub) -> None:
    from durabletask.extensions.langgraph._server import threads

    async with serve(
        resource_hub, [assistants.routes, threads.routes], worker_parts=[*_PARTS, threads.register_worker]
    ) as served:
        created = await served.sdk.assistants.create(graph_id="chain")
        aid = created["assistant_id"]
        mine = await served.sdk.threads.create(metadata={"assistant_id": aid})
        other = await served.sdk.threads.create(metadata={"assistant_id": _system_id("chain")})
        await served.sdk.assistants.delete(aid, delete_threads=True)
        with pytest.raises(NotFoundError):
            await served.sdk.threads.get(mine["thread_id"])
        assert (await served.sdk.threads.get(other["thread_id"]))["thread_id"] == other["thread_id"]


async def test_concurrent_updates_through_two_servers_make_distinct_versions(resource_hub: ResourceHub) -> None:
    async with (
        serve(resource_hub, _ROUTES, worker_parts=_PARTS) as one,
        serve(resource_hub, _ROUTES, start_worker=False) as other,
    ):
        created = await one.sdk.assistants.create(graph_id="chain", metadata={"start": True})
        aid = created["assistant_id"]
        servers = [one, other]
        updates = [servers[n % 2].sdk.assistants.update(aid, metadata={f"k{n}": n}) for n in range(8)]
        results = await asyncio.gather(*updates)
        assert sorted(r["version"] for r in results) == list(range(2, 10))
        final = await other.sdk.assistants.get(aid)
        assert final["version"] == 9
        assert final["metadata"] == {"start": True, **{f"k{n}": n for n in range(8)}}
        assert [v["version"] for v in await one.sdk.assistants.get_versions(aid, limit=100)] == list(range(9, 0, -1))
