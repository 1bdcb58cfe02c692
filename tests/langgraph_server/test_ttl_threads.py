"""Thread TTLs end to end on an emulator whose clock the test moves: a thread expires when its TTL has run out since
its last write, deleted or pruned, with no server up at that moment and across a worker restart."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from durabletask.extensions.langgraph._server.threads_records import Records
from tests.langgraph_server.support_runs import RunsHub
from tests.langgraph_server.support_ttl import advance, clocked_emulator, clocked_hub, record_when
from tests.langgraph_server.support_webhooks import project, serve, worker_for

__all__ = ["clocked_emulator", "clocked_hub"]
pytestmark = [pytest.mark.timeout(180)]


def _gone(found: dict[str, Any] | None) -> bool:
    return found is None


async def test_a_thread_is_deleted_once_its_ttl_runs_out(clocked_hub: RunsHub, clocked_emulator: Any) -> None:
    async with serve(clocked_hub) as s:
        made = await s.sdk.threads.create(ttl=1)
        tid = made["thread_id"]
        shown = await s.sdk.threads.get(tid, include=["ttl"])
        expires = datetime.fromisoformat(made["created_at"]) + timedelta(minutes=1)
        assert shown["ttl"] == {"strategy": "delete", "ttl_minutes": 1, "expires_at": expires.isoformat()}
        assert "ttl" not in await s.sdk.threads.get(tid)
        advance(clocked_emulator, 0.5)
        await s.sdk.threads.update(tid, metadata={"k": "v"})  # still there
        advance(clocked_emulator, 2)
        assert await record_when(Records(s.ctx.client), tid, _gone) is None
        with pytest.raises(httpx.HTTPStatusError) as missing:
            await s.sdk.threads.get(tid)
        assert missing.value.response.status_code == 404


async def test_a_new_ttl_starts_the_clock_again(clocked_hub: RunsHub, clocked_emulator: Any) -> None:
    async with serve(clocked_hub) as s:
        records = Records(s.ctx.client)
        tid = (await s.sdk.threads.create(ttl={"ttl": 1, "strategy": "delete"}))["thread_id"]
        updated = await s.sdk.threads.update(tid, metadata={}, ttl={"ttl": 10, "strategy": "delete"})
        assert updated["thread_id"] == tid
        ttl = (await s.sdk.threads.get(tid, include=["ttl"]))["ttl"]
        assert ttl["ttl_minutes"] == 10
        advance(clocked_emulator, 2)  # the first check arrives, finds the thread alive, and waits for the new expiry
        found = await record_when(records, tid, lambda r: r is not None and r.get("ttl_check") == ttl["expires_at"])
        assert found is not None
        advance(clocked_emulator, 9)
        assert await record_when(records, tid, _gone) is None


async def test_keep_latest_prunes_the_history_and_keeps_the_thread(clocked_hub: RunsHub, clocked_emulator: Any) -> None:
    async with serve(clocked_hub) as s:
        tid = (await s.sdk.threads.create(ttl={"ttl": 5, "strategy": "keep_latest"}))["thread_id"]
        for topic in ("a", "b"):
            await s.sdk.runs.wait(tid, "chain", input={"topic": topic, "steps": []})
        before = await s.sdk.threads.get_history(tid, limit=50)
        assert len(before) > 2
        advance(clocked_emulator, 6)
        async with asyncio.timeout(60):
            while len(history := await s.sdk.threads.get_history(tid, limit=50)) > 1:
                await asyncio.sleep(0.05)
        assert history[0]["values"] == before[0]["values"]
        assert (await s.sdk.threads.get(tid))["values"]["steps"][-1] == "write:b"


async def test_a_busy_thread_waits_for_its_run(clocked_hub: RunsHub, clocked_emulator: Any, tmp_path: Path) -> None:
    flag = tmp_path / "go"
    async with serve(clocked_hub) as s:
        records = Records(s.ctx.client)
        tid = (await s.sdk.threads.create(ttl=1))["thread_id"]
        run = await s.sdk.runs.create(tid, "held", input={"topic": str(flag), "steps": []})
        await record_when(records, tid, lambda r: r["runs"][run["run_id"]]["status"] == "running")
        armed = await record_when(records, tid, lambda r: r.get("ttl_check") is not None)
        assert armed is not None
        advance(clocked_emulator, 3)  # the check finds the thread busy: it stays
        found = await record_when(records, tid, lambda r: r is not None and r.get("ttl_check") is None)
        assert found is not None and found["runs"][run["run_id"]]["status"] == "running"
        flag.write_text("go")
        await s.sdk.runs.join(tid, run["run_id"])  # the run's end writes to the thread: its TTL starts again
        await record_when(records, tid, lambda r: r is not None and r.get("ttl_check") is not None)
        advance(clocked_emulator, 2)
        assert await record_when(records, tid, _gone) is None


async def test_expiry_needs_no_server_and_waits_for_a_worker(clocked_hub: RunsHub, clocked_emulator: Any) -> None:
    config = project()
    w = worker_for(clocked_hub, config)
    w.start()
    async with serve(clocked_hub, config, start_worker=False) as s:
        tid = (await s.sdk.threads.create(ttl=1, metadata={"who": "gone-soon"}))["thread_id"]
    w.stop()  # neither a server nor a worker is up when the thread expires
    advance(clocked_emulator, 2)
    client = clocked_hub.async_client()
    try:
        records = Records(client)
        assert await records.read(tid) is not None
        later = worker_for(clocked_hub, config)
        later.start()
        try:
            assert await record_when(records, tid, _gone) is None
        finally:
            later.stop()
    finally:
        await client.close()


BAD_TTLS: list[Any] = [
    -1,
    0,
    1e308,
    "5",
    True,
    [],
    {"ttl": 5, "strategy": "burn"},
    {"ttl": 5, "when": "later"},
    {"strategy": "delete"},
    {"ttl": -0.5},
    {"ttl": 10 * 365 * 24 * 60 + 1},
]


@pytest.mark.adversarial
@pytest.mark.parametrize("ttl", BAD_TTLS)
async def test_a_bad_ttl_is_refused(clocked_hub: RunsHub, ttl: Any) -> None:
    async with serve(clocked_hub) as s:
        answer = await s.http.post("/threads", json={"ttl": ttl})
        assert answer.status_code == 422 and "ttl" in answer.json()["detail"], answer.text
        tid = (await s.sdk.threads.create())["thread_id"]
        answer = await s.http.patch(f"/threads/{tid}", json={"ttl": ttl})
        assert answer.status_code == 422 and "ttl" in answer.json()["detail"], answer.text
        assert "ttl" not in (await s.http.get(f"/threads/{tid}?include=ttl")).json()
        assert (await s.http.get(f"/threads/{tid}?include=secrets")).status_code == 422


async def test_the_projects_default_ttl_covers_threads_runs_make(clocked_hub: RunsHub, clocked_emulator: Any) -> None:
    config = replace(project(), thread_ttl={"strategy": "delete", "ttl_minutes": 1})
    async with serve(clocked_hub, config) as s:
        own = (await s.sdk.threads.create(ttl={"ttl": 30, "strategy": "delete"}))["thread_id"]
        plain = (await s.sdk.threads.create())["thread_id"]
        assert (await s.sdk.threads.get(plain, include=["ttl"]))["ttl"]["ttl_minutes"] == 1
        await s.sdk.runs.wait("made-by-a-run", "chain", input={"topic": "x", "steps": []}, if_not_exists="create")
        assert (await s.sdk.threads.get("made-by-a-run", include=["ttl"]))["ttl"]["strategy"] == "delete"
        advance(clocked_emulator, 2)
        records = Records(s.ctx.client)
        for tid in (plain, "made-by-a-run"):
            assert await record_when(records, tid, _gone) is None
        assert (await s.sdk.threads.get(own))["thread_id"] == own


@pytest.mark.adversarial
@pytest.mark.parametrize(
    "raw", [b'{"ttl": NaN}', b'{"ttl": Infinity}', b'{"ttl": {"ttl": -Infinity}}', b'{"ttl": 1e999}']
)
async def test_a_ttl_json_cannot_hold_is_refused(clocked_hub: RunsHub, raw: bytes) -> None:
    async with serve(clocked_hub, start_worker=False) as s:
        answer = await s.http.post("/threads", content=raw, headers={"content-type": "application/json"})
        assert answer.status_code == 422, answer.text
        assert "ttl" in answer.json()["detail"], answer.text


async def test_a_run_gives_an_older_thread_the_default_ttl(clocked_hub: RunsHub, clocked_emulator: Any) -> None:
    async with serve(clocked_hub) as before:
        tid = (await before.sdk.threads.create())["thread_id"]  # made before checkpointer.ttl was set
    config = replace(project(), thread_ttl={"strategy": "delete", "ttl_minutes": 1})
    async with serve(clocked_hub, config) as s:
        assert "ttl" not in await s.sdk.threads.get(tid, include=["ttl"])
        await s.sdk.runs.wait(tid, "chain", input={"topic": "x", "steps": []})
        assert (await s.sdk.threads.get(tid, include=["ttl"]))["ttl"]["ttl_minutes"] == 1
        advance(clocked_emulator, 2)
        assert await record_when(Records(s.ctx.client), tid, _gone) is None
