"""Durable streams where people read them: server-sent events (aiohttp) and ``durabletask follow``."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest

from durabletask import streams, task
from durabletask._cli.main import main

from .conftest import Hub, unique_id


def chatter(ctx: task.OrchestrationContext, words: list[str]) -> Any:
    for word in words:
        ctx.publish({"word": word}, topic="words")
        yield ctx.create_timer(ctx.current_utc_datetime)
    return len(words)


def _start(hub: Hub, words: list[str]) -> str:
    hub.start_worker([chatter])
    return hub.client().schedule_new_orchestration(chatter, input=words, instance_id=unique_id("sse"))


def _frames(body: str) -> list[dict[str, str]]:
    frames = []
    for block in body.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
        if fields:
            frames.append(fields)
    return frames


def test_server_sent_events_resume_with_last_event_id(hub: Hub) -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    instance_id = _start(hub, ["a", "b", "c", "d"])

    async def scenario() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        reader = hub.async_client()

        async def handler(request: web.Request) -> web.StreamResponse:
            try:
                frames = streams.sse(
                    reader, request.match_info["id"], last_event_id=request.headers.get("Last-Event-ID")
                )
            except streams.StreamCursorError as error:
                raise web.HTTPBadRequest(text=str(error)) from error
            response = web.StreamResponse(headers=streams.SSE_HEADERS)
            await response.prepare(request)
            async for frame in frames:
                await response.write(frame)
            return response

        app = web.Application()
        app.router.add_get("/stream/{id}", handler)
        async with TestClient(TestServer(app)) as http:
            first = await http.get(f"/stream/{instance_id}")
            assert first.headers["Content-Type"].startswith("text/event-stream")
            everything = _frames(await first.text())
            again = await http.get(f"/stream/{instance_id}", headers={"Last-Event-ID": everything[1]["id"]})
            resumed = _frames(await again.text())
            bad = await http.get(f"/stream/{instance_id}", headers={"Last-Event-ID": "nonsense"})
            assert bad.status == 400 and "not a stream cursor" in await bad.text()
        await reader.close()
        return everything, resumed

    everything, resumed = asyncio.run(scenario())
    assert [json.loads(f["data"])["data"]["word"] for f in everything[:-1]] == ["a", "b", "c", "d"]
    assert everything[-1]["event"] == streams.END_EVENT
    assert all(f["event"] == "words" for f in everything[:-1])
    assert [f.get("id") for f in resumed] == [f.get("id") for f in everything[2:]]


def test_follow_prints_items_until_the_instance_ends(hub: Hub) -> None:
    instance_id = _start(hub, ["x", "y"])
    out, err = io.StringIO(), io.StringIO()
    assert main([*hub.cli_args(), "--json", "follow", instance_id, "--timeout", "60"], stdout=out, stderr=err) == 0
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["data"] for r in records] == [{"word": "x"}, {"word": "y"}]
    out = io.StringIO()
    assert main([*hub.cli_args(), "follow", instance_id, "--after", records[0]["id"]], stdout=out, stderr=err) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and '{"word": "y"}' in lines[0] and records[1]["id"] in lines[0]


@pytest.mark.adversarial
def test_follow_names_a_missing_instance(hub: Hub) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main([*hub.cli_args(), "follow", "no-such-instance"], stdout=out, stderr=err) == 1
    assert "no orchestration instance 'no-such-instance'" in err.getvalue()


def test_frames_carry_the_cursor_topic_and_attempt() -> None:
    from datetime import datetime, timezone

    item = streams.StreamItem(
        "000000000003-abcdef12", "tokens", {"t": "Hi"}, datetime(2026, 1, 1, tzinfo=timezone.utc), 4, 2
    )
    frame = streams.format_frame(item)
    assert frame.startswith("id: 000000000003-abcdef12\nevent: tokens\ndata: ") and frame.endswith("\n\n")
    body: dict[str, Any] = json.loads(frame.split("data: ", 1)[1])
    assert body == {
        "topic": "tokens",
        "data": {"t": "Hi"},
        "time": "2026-01-01T00:00:00+00:00",
        "task_id": 4,
        "attempt": 2,
    }
