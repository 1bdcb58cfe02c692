"""The crons' routes, through ``langgraph_sdk``'s client, against the emulator: each cron is a scheduled task
(seen by a second server), disabled crons are paused schedules, and hostile bodies get a 4xx naming the field."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

import pytest
from langgraph_sdk.errors import NotFoundError

from durabletask.extensions.langgraph._server import assistants, crons, store
from durabletask.extensions.langgraph._server import crons_model as model
from tests.langgraph_server.support_resources import ResourceHub, resource_hub, resources_emulator, serve

__all__ = ["resource_hub", "resources_emulator"]

_PARTS = [store.register_worker, assistants.register_worker, crons.register_worker]
_ROUTES = [assistants.routes, crons.routes]
_YEARLY = "0 0 1 1 *"
_INPUT = {"topic": "news", "steps": []}


def _next_new_year() -> str:
    now = datetime.now(timezone.utc)
    return datetime(now.year + 1, 1, 1, tzinfo=timezone.utc).isoformat(timespec="microseconds")


async def test_create_search_count_delete(resource_hub: ResourceHub) -> None:
    async with (
        serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served,
        serve(resource_hub, _ROUTES, start_worker=False) as other,
    ):
        tag = uuid.uuid4().hex
        created = await served.sdk.crons.create("chain", schedule=_YEARLY, input=_INPUT, metadata={"tag": tag})
        cron_id = created["cron_id"]
        assert created["assistant_id"] == str(uuid.uuid5(uuid.NAMESPACE_URL, "chain"))
        assert (created["schedule"], created["enabled"], created["thread_id"]) == (_YEARLY, True, None)
        assert created["payload"]["input"] == _INPUT
        assert created["on_run_completed"] == "delete"
        assert created["next_run_date"] == _next_new_year()
        found = await other.sdk.crons.search(metadata={"tag": tag})
        assert [c["cron_id"] for c in found] == [cron_id]
        assert found[0] == created
        assert await other.sdk.crons.count(metadata={"tag": tag}) == 1
        by_assistant = await served.sdk.crons.search(assistant_id=created["assistant_id"], limit=100)
        assert cron_id in {c["cron_id"] for c in by_assistant}
        by_graph_id = await served.sdk.crons.search(assistant_id="chain", limit=100)
        assert cron_id in {c["cron_id"] for c in by_graph_id}
        assert await served.sdk.crons.count(assistant_id="nested", metadata={"tag": tag}) == 0
        await other.sdk.crons.delete(cron_id)
        assert await served.sdk.crons.search(metadata={"tag": tag}) == []
        with pytest.raises(NotFoundError):
            await served.sdk.crons.delete(cron_id)


async def test_update_changes_the_schedule_pauses_and_merges_metadata(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        tag = uuid.uuid4().hex
        created = await served.sdk.crons.create(
            "nested",
            schedule=_YEARLY,
            input=_INPUT,
            metadata={"tag": tag, "a": 1},
            end_time=datetime(2999, 1, 1, tzinfo=timezone.utc),
        )
        cron_id = created["cron_id"]
        assert created["end_time"] == "2999-01-01T00:00:00.000000+00:00"
        paused = await served.sdk.crons.update(cron_id, enabled=False, metadata={"b": 2})
        assert (paused["enabled"], paused["next_run_date"]) == (False, None)
        assert paused["metadata"] == {"tag": tag, "a": 1, "b": 2}
        assert [c["cron_id"] for c in await served.sdk.crons.search(metadata={"tag": tag}, enabled=False)] == [cron_id]
        assert await served.sdk.crons.search(metadata={"tag": tag}, enabled=True) == []
        moved = await served.sdk.crons.update(
            cron_id, schedule="30 6 * * *", timezone="Europe/Paris", enabled=True, end_time=None, input={"topic": "x"}
        )
        assert (moved["schedule"], moved["timezone"], moved["enabled"], moved["end_time"]) == (
            "30 6 * * *",
            "Europe/Paris",
            True,
            None,
        )
        assert moved["payload"]["input"] == {"topic": "x"}
        next_run = datetime.fromisoformat(moved["next_run_date"])
        local = next_run.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris"))
        assert (local.hour, local.minute) == (6, 30)
        assert moved["created_at"] == created["created_at"] and moved["updated_at"] > created["updated_at"]
        await served.sdk.crons.delete(cron_id)


async def test_search_sorts_pages_and_selects(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        tag = uuid.uuid4().hex
        made = [
            await served.sdk.crons.create("chain", schedule=_YEARLY, input=_INPUT, metadata={"tag": tag, "n": n})
            for n in range(3)
        ]
        newest_first = await served.sdk.crons.search(metadata={"tag": tag})
        assert [c["cron_id"] for c in newest_first] == [c["cron_id"] for c in reversed(made)]
        oldest = await served.sdk.crons.search(
            metadata={"tag": tag},
            sort_by="created_at",
            sort_order="asc",
            limit=1,
            offset=1,
            select=["cron_id", "metadata"],
        )
        assert oldest == [{"cron_id": made[1]["cron_id"], "metadata": {"tag": tag, "n": 1}}]


_HOSTILE: list[tuple[str, str, dict[str, Any], int, str]] = [
    ("POST", "/runs/crons", {"json": {"assistant_id": "chain"}}, 422, "field 'schedule' is required"),
    ("POST", "/runs/crons", {"json": {"schedule": _YEARLY}}, 422, "field 'assistant_id' is required"),
    ("POST", "/runs/crons", {"json": {"assistant_id": "nope", "schedule": _YEARLY}}, 404, "assistant 'nope'"),
    ("POST", "/runs/crons", {"json": {"assistant_id": "chain", "schedule": "every day"}}, 422, "field 'schedule'"),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": "*" * 300}},
        422,
        f"field 'schedule' is 300 characters long; the limit is {model.SCHEDULE_MAX_CHARS}",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": _YEARLY, "timezone": "Mars/Olympus"}},
        422,
        "field 'timezone' is not an IANA time zone",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": _YEARLY, "end_time": "soon"}},
        422,
        "field 'end_time'",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": _YEARLY, "enabled": "yes"}},
        422,
        "field 'enabled' must be true or false",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": _YEARLY, "metadata": [1]}},
        422,
        "field 'metadata' must be a JSON object",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": _YEARLY, "on_run_completed": "x"}},
        422,
        "field 'on_run_completed'",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": _YEARLY, "input": {"topic": "t" * 300_000}}},
        422,
        f"the limit is {model.PAYLOAD_MAX_BYTES}",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": _YEARLY, "multitask_strategy": "explode"}},
        422,
        "multitask_strategy",
    ),
    ("POST", "/runs/crons", {"content": b"[]"}, 422, "must be a JSON object"),
    ("POST", "/runs/crons/search", {"json": {"limit": 0}}, 422, "field 'limit' must be from 1 to 1000"),
    ("POST", "/runs/crons/search", {"json": {"sort_by": "payload"}}, 422, "field 'sort_by'"),
    ("POST", "/runs/crons/count", {"json": {"enabled": 1}}, 422, "field 'enabled'"),
    ("PATCH", f"/runs/crons/{uuid.UUID(int=5)}", {"json": {"enabled": False}}, 404, "not found"),
    ("PATCH", "/runs/crons/not-a-uuid", {"json": {}}, 404, "cron 'not-a-uuid'"),
    ("DELETE", "/runs/crons/" + "x" * 500, {}, 404, "not found"),
    ("POST", "/threads/" + "t" * 2000 + "/runs/crons", {"json": {}}, 422, "the limit is 1000"),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": "0 0 31 2 *"}},
        422,
        "field 'schedule' '0 0 31 2 *' names no date that exists",
    ),
    (
        "POST",
        "/runs/crons",
        {"json": {"assistant_id": "chain", "schedule": "0 12 31 4,6,9,11 *", "timezone": "Europe/Paris"}},
        422,
        "field 'schedule'",
    ),
    (
        "POST",
        "/runs/crons",
        {"content": b'{"assistant_id": "chain", "schedule": "0 0 1 1 *", "input": {"n": ' + b"9" * 5000 + b"}}"},
        422,
        "a number too long to read; the limit is 4300 digits",
    ),
    (
        "POST",
        "/runs/crons",
        {"content": b'{"assistant_id": "chain", "schedule": "0 0 1 1 *", "metadata": {"m": "\\ud800"}}'},
        422,
        "field 'metadata.m' holds a lone surrogate",
    ),
]


@pytest.mark.adversarial
async def test_an_update_to_a_schedule_that_never_fires_is_refused_and_changes_nothing(
    resource_hub: ResourceHub,
) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        created = await served.sdk.crons.create("chain", schedule=_YEARLY, input=_INPUT)
        refused = await served.http.patch(f"/runs/crons/{created['cron_id']}", json={"schedule": "0 0 30 2 *"})
        assert refused.status_code == 422 and "field 'schedule'" in refused.json()["detail"], refused.text
        (kept,) = await served.sdk.crons.search(assistant_id="chain")
        assert (kept["schedule"], kept["next_run_date"]) == (_YEARLY, created["next_run_date"])
        leap = await served.sdk.crons.update(created["cron_id"], schedule="0 0 29 2 *")  # every four years is fine
        assert datetime.fromisoformat(leap["next_run_date"]).strftime("%m-%d") == "02-29"
        await served.sdk.crons.delete(created["cron_id"])


@pytest.mark.adversarial
async def test_hostile_requests_get_a_4xx_naming_the_field(resource_hub: ResourceHub) -> None:
    async with serve(resource_hub, _ROUTES, worker_parts=_PARTS) as served:
        for method, path, kwargs, status, expected in _HOSTILE:
            response = await served.http.request(method, path, **kwargs)
            detail = response.json().get("detail", "")
            assert response.status_code == status, (method, path, response.status_code, detail)
            assert expected in detail, (method, path, detail)
        assert await served.sdk.crons.count() == 0  # nothing refused was created
