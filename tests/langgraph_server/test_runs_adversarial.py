"""Hostile requests to the thread and run routes: each gets a 4xx whose message names the field, never a 500."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(180), pytest.mark.adversarial]

RUN_BODIES: list[tuple[Any, int, str]] = [
    ("not json", 422, "JSON"),
    ([1, 2], 422, "object"),
    ({}, 422, "assistant_id"),
    ({"assistant_id": 7}, 422, "assistant_id"),
    ({"assistant_id": "nope"}, 404, "nope"),
    ({"assistant_id": "chain", "stream_mode": "everything"}, 422, "stream_mode"),
    ({"assistant_id": "chain", "stream_mode": [1]}, 422, "stream_mode"),
    ({"assistant_id": "chain", "multitask_strategy": "shout"}, 422, "multitask_strategy"),
    ({"assistant_id": "chain", "input": {"topic": "x"}, "command": {"resume": 1}}, 422, "command"),
    ({"assistant_id": "chain", "command": {"jump": 1}}, 422, "command.jump"),
    ({"assistant_id": "chain", "checkpoint": "abc"}, 422, "checkpoint"),
    ({"assistant_id": "chain", "checkpoint": {"checkpoint_ns": "x:1"}}, 422, "checkpoint_ns"),
    ({"assistant_id": "chain", "checkpoint_id": 5}, 422, "checkpoint_id"),
    ({"assistant_id": "chain", "config": []}, 422, "config"),
    ({"assistant_id": "chain", "config": {"recursion_limit": -1}}, 422, "config.recursion_limit"),
    ({"assistant_id": "chain", "config": {"recursion_limit": "x"}}, 422, "config.recursion_limit"),
    ({"assistant_id": "chain", "config": {"configurable": 3}}, 422, "config.configurable"),
    ({"assistant_id": "chain", "config": {"tags": "t"}}, 422, "config.tags"),
    ({"assistant_id": "chain", "stream_subgraphs": "yes"}, 422, "stream_subgraphs"),
    ({"assistant_id": "chain", "interrupt_before": "plan"}, 422, "interrupt_before"),
    ({"assistant_id": "chain", "after_seconds": -1}, 422, "after_seconds"),
    ({"assistant_id": "chain", "after_seconds": 200_000}, 422, "after_seconds"),
    ({"assistant_id": "chain", "after_seconds": "soon"}, 422, "after_seconds"),
    ({"assistant_id": "chain", "webhook": "ftp://example.com"}, 422, "webhook"),
    ({"assistant_id": "chain", "if_not_exists": "maybe"}, 422, "if_not_exists"),
    ({"assistant_id": "chain", "surprise": 1}, 422, "surprise"),
    ({"assistant_id": "chain", "metadata": {"k": "v" * 70_000}}, 422, "metadata"),
]


@pytest.mark.parametrize(("body", "status", "names"), RUN_BODIES)
async def test_bad_run_bodies(runs_hub: RunsHub, body: Any, status: int, names: str) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        for path in (f"/threads/{tid}/runs", f"/threads/{tid}/runs/wait", "/runs/stream"):
            content = body if isinstance(body, str) else None
            json_body = None if isinstance(body, str) else body
            response = await s.http.post(path, content=content, json=json_body)
            assert response.status_code == status, (path, response.text)
            assert names in response.json()["detail"], response.text


THREAD_BODIES: list[tuple[str, str, Any, str]] = [
    ("POST", "/threads", {"thread_id": 5}, "thread_id"),
    ("POST", "/threads", {"thread_id": ""}, "thread_id"),
    ("POST", "/threads", {"thread_id": "x" * 2000}, "thread_id"),
    ("POST", "/threads", {"thread_id": "a\u0000b"}, "thread_id"),
    ("POST", "/threads", {"metadata": [1]}, "metadata"),
    ("POST", "/threads", {"metadata": {"k": "v" * 70_000}}, "65536"),
    ("POST", "/threads", {"if_exists": "explode"}, "if_exists"),
    ("POST", "/threads", {"ttl": -5}, "ttl"),
    ("POST", "/threads/search", {"limit": -1}, "limit"),
    ("POST", "/threads/search", {"limit": "ten"}, "limit"),
    ("POST", "/threads/search", {"limit": 10**9}, "limit"),
    ("POST", "/threads/search", {"sort_by": "color"}, "sort_by"),
    ("POST", "/threads/search", {"select": ["secret"]}, "select"),
    ("POST", "/threads/search", {"status": "sleepy"}, "status"),
    ("POST", "/threads/search", {"ids": "one"}, "ids"),
    ("POST", "/threads/count", {"metadata": "x"}, "metadata"),
    ("POST", "/threads/prune", {}, "thread_ids"),
    ("POST", "/threads/prune", {"thread_ids": ["a"], "strategy": "burn"}, "strategy"),
]


@pytest.mark.parametrize(("method", "path", "body", "names"), THREAD_BODIES)
async def test_bad_thread_bodies(runs_hub: RunsHub, method: str, path: str, body: Any, names: str) -> None:
    async with serve(runs_hub, start_worker=False) as s:
        response = await s.http.request(method, path, json=body)
        assert 400 <= response.status_code < 500, response.text
        assert names in response.json()["detail"], response.text


async def test_bad_parameters_and_missing_things(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        cases: list[tuple[str, str, dict[str, Any], int, str]] = [
            ("GET", "/threads/missing-thread", {}, 404, "missing-thread"),
            ("GET", "/threads/missing-thread/state", {}, 404, "missing-thread"),
            ("POST", "/threads/missing-thread/runs", {"json": {"assistant_id": "chain"}}, 404, "missing-thread"),
            ("GET", f"/threads/{tid}/runs/nope", {}, 404, "nope"),
            ("GET", f"/threads/{tid}/runs?limit=-3", {}, 422, "limit"),
            ("GET", f"/threads/{tid}/runs?status=late", {}, 422, "status"),
            ("POST", f"/threads/{tid}/state", {"json": {"values": {"topic": "x"}}}, 409, "graph"),
            ("POST", f"/threads/{tid}/history", {"json": {"limit": "all"}}, 422, "limit"),
            ("POST", f"/threads/{tid}/history", {"json": {"before": 3}}, 422, "before"),
            ("POST", f"/threads/{tid}/state/checkpoint", {"json": {}}, 422, "checkpoint"),
            ("GET", f"/threads/{tid}/state?subgraphs=perhaps", {}, 422, "subgraphs"),
            ("GET", f"/threads/{tid}/stream?stream_mode=lifecycle", {}, 422, "stream_mode"),
        ]
        for method, path, kwargs, status, names in cases:
            response = await s.http.request(method, path, **kwargs)
            assert response.status_code == status, (path, response.text)
            assert names in response.json()["detail"], (path, response.text)
        run = await s.sdk.runs.create(tid, "chain", input={"topic": "x"})
        await s.sdk.runs.join(tid, run["run_id"])
        base = f"/threads/{tid}/runs/{run['run_id']}"
        for method, path, headers, names in [
            ("GET", f"{base}/stream", {"Last-Event-ID": "not-an-id"}, "Last-Event-ID"),
            ("GET", f"{base}/stream?stream_mode=everything", {}, "stream_mode"),
            ("POST", f"{base}/cancel?action=explode", {}, "action"),
            ("POST", f"{base}/cancel?wait=sometimes", {}, "wait"),
        ]:
            response = await s.http.request(method, path, headers=headers)
            assert response.status_code == 422, (path, response.text)
            assert names in response.json()["detail"], (path, response.text)
        other = await s.http.post(f"/threads/{tid}/runs", json={"assistant_id": "ask"})
        assert other.status_code == 409 and "chain" in other.json()["detail"]
        state = await s.http.get(f"/threads/{tid}/state/1ef-not-a-checkpoint")  # as LangGraph reads it: empty
        assert state.status_code == 200 and state.json()["values"] == {} and state.json()["next"] == []


@pytest.mark.parametrize("thread_id", ["a/b", "x?y#z", "%2F", "ü/ß", "a\\b", "..", "用户-42", "a\nb", "t" * 1000])
async def test_thread_ids_langgraph_accepts_work_in_paths(runs_hub: RunsHub, thread_id: str) -> None:
    async with serve(runs_hub) as s:
        await s.sdk.threads.create(thread_id=thread_id)
        assert (await s.sdk.threads.get(thread_id))["thread_id"] == thread_id
        assert (await s.sdk.runs.wait(thread_id, "chain", input={"topic": "t"}))["steps"] == ["plan:t", "write:t"]
        assert (await s.sdk.threads.get_state(thread_id))["values"]["topic"] == "t"
        parts = [p.event async for p in s.sdk.runs.stream(thread_id, "chain", input={"topic": "u"})]
        assert parts[0] == "metadata" and parts[-1] == "end"
        await s.sdk.threads.delete(thread_id)


DEEP = "[" * 150 + "]" * 150


async def test_text_no_thread_can_keep_is_refused(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        await s.sdk.runs.wait(tid, "chain", input={"topic": "x"})
        for method, path, body, names in [
            ("POST", "/threads", '{"metadata": {"\\ud800": 1}}', "surrogate"),
            ("POST", "/threads", '{"metadata": {"k": "a\\udfffb"}}', "surrogate"),
            ("PATCH", f"/threads/{tid}", '{"metadata": {"k": "\\ud800"}}', "surrogate"),
            ("POST", f"/threads/{tid}/runs/wait", '{"assistant_id": "chain", "input": {"topic": "\\ud800"}}', "topic"),
            ("POST", f"/threads/{tid}/state", '{"values": {"topic": ' + DEEP + "}}", "nested"),
            ("POST", f"/threads/{tid}/runs", '{"assistant_id": "chain", "input": {"topic": ' + DEEP + "}}", "nested"),
            ("POST", "/threads/search", '{"metadata": {"k": ' + DEEP + "}}", "nested"),
            ("POST", "/runs/batch", '[{"assistant_id": "chain", "input": ' + DEEP + "}]", "nested"),
            ("POST", "/threads", "[" * 100_000, "JSON"),
            ("POST", "/threads", '{"metadata": {"x": ' + "9" * 5000 + "}}", "number"),
            ("POST", f"/threads/{tid}/runs/wait", '{"assistant_id": "chain", "input": ' + "9" * 5000 + "}", "number"),
            ("POST", "/runs/batch", "[" + "9" * 5000 + "]", "number"),
        ]:
            response = await s.http.request(method, path, content=body.encode())
            assert response.status_code == 422, (method, path, response.text[:300])
            assert names in response.json()["detail"], response.text[:300]
        assert (await s.sdk.threads.get_state(tid))["values"]["topic"] == "x"


@pytest.mark.parametrize(
    "garbage", ["not-an-id", "1e5", "1-2-3", "0x10", "9" * 5000, "1.2.3", "a.b", ".", "1.", "NaN", "1_0", "١٢"]
)
async def test_garbage_last_event_ids(runs_hub: RunsHub, garbage: str) -> None:
    async with serve(runs_hub) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        run = await s.sdk.runs.create(tid, "chain", input={"topic": "x"}, stream_resumable=True)
        await s.sdk.runs.join(tid, run["run_id"])
        for path in (f"/threads/{tid}/runs/{run['run_id']}/stream", f"/threads/{tid}/stream"):
            header = garbage.encode("utf-8")  # sent as its UTF-8 bytes
            response = await s.http.get(path, headers={"Last-Event-ID": header})
            assert response.status_code == 422, (path, response.text[:200])
            assert "Last-Event-ID" in response.json()["detail"] and len(response.text) < 500


async def test_racing_creates_of_one_thread_id(runs_hub: RunsHub) -> None:
    async with serve(runs_hub) as s:
        answers = await asyncio.gather(*[s.http.post("/threads", json={"thread_id": "race-1"}) for _ in range(10)])
        assert sorted(a.status_code for a in answers) == [200] + [409] * 9
        again = await asyncio.gather(
            *[s.http.post("/threads", json={"thread_id": "race-2", "if_exists": "do_nothing"}) for _ in range(10)]
        )
        assert {a.status_code for a in again} == {200} and len({a.json()["created_at"] for a in again}) == 1
